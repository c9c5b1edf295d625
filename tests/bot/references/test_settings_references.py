"""References in the settings: loaded per group, checked at start-up (exit 78) and by doctor."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.cli import EXIT_CONFIG, main
from bot.doctor import run_doctor
from bot.settings import SettingsError, load_settings

GROUP = '[groups.core]\nplatform = "slack"\nchannel = "C1"\n'


def reference(name: str, base_url: str, api: str = "anthropic", **extra: object) -> str:
    lines = [
        "[[groups.core.references]]",
        f'name = "{name}"',
        f'api = "{api}"',
        f'base_url = "{base_url}"',
        'model = "m-1"',
        'key_env = "REF_KEY"',
    ] + [f"{k} = {v!r}".replace("'", '"') for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_references_load_with_their_defaults() -> None:
    Path("tribunal.toml").write_text(
        GROUP
        + "reference_deadline_s = 30\n"
        + reference("one", "https://api.example.com")
        + reference("two", "https://llm.example.org/v1", api="openai-chat", timeout_s=5.5)
    )
    s = load_settings(env_file=None)
    core = s.groups["core"]
    assert [r.name for r in core.references] == ["one", "two"]
    assert core.references[1].api == "openai-chat" and core.references[1].timeout_s == 5.5
    assert core.references[0].max_tokens == 1500 and core.reference_deadline_s == 30
    assert core.allow_private_urls is False and s.console.references == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/latest", "points at a link-local address"),
        ("http://localhost:9000", "points at a local or metadata host name"),
        ("http://10.1.2.3/v1", "points at a private address"),
        ("file:///etc/passwd", "must be an http or https URL"),
    ],
)
def test_an_unsafe_base_url_stops_the_start_with_exit_78(
    capsys: pytest.CaptureFixture[str], url: str, why: str
) -> None:
    Path("tribunal.toml").write_text(GROUP + reference("meta", url))
    with pytest.raises(SettingsError) as caught:
        load_settings(env_file=None)
    [line] = caught.value.lines
    assert line.startswith(f"settings: groups.core: references.meta.base_url '{url}' {why}")
    assert main(["serve"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err
    assert ("allow_private_urls" in err) == url.startswith("http")  # what would allow it


def test_doctor_says_the_same(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    Path("tribunal.toml").write_text(GROUP + reference("meta", "http://169.254.169.254/"))
    out = io.StringIO()
    assert run_doctor(None, out=out, env_file=None) == 1
    first = out.getvalue().splitlines()[0]
    assert first.startswith("settings: fix: groups.core: references.meta.base_url")
    assert "link-local" in first


def test_doctor_says_how_the_references_connect(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("REF_KEY", "sk-ref-not-real")
    _no_proxy(monkeypatch)
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    Path("tribunal.toml").write_text(
        GROUP
        + reference("one", "https://api.example.com")
        + '[groups.lab]\nplatform = "slack"\nchannel = "C2"\nallow_private_urls = true\n'
        + reference("local", "http://127.0.0.1:8080/v1").replace("groups.core", "groups.lab")
    )
    out = io.StringIO()
    run_doctor(None, out=out, env_file=None)
    [line] = [x for x in out.getvalue().splitlines() if x.startswith("references: ")]
    assert line == (
        "references: ok (core/one (anthropic, https://api.example.com), lab/local (anthropic, "
        "http://127.0.0.1:8080/v1)); addresses checked at each connection (core); HTTPS_PROXY "
        "not used by those references: a proxy would resolve their host names itself, past the "
        "address check; private addresses allowed (lab: allow_private_urls)"
    )


def test_loopback_is_allowed_when_the_group_says_so() -> None:
    Path("tribunal.toml").write_text(
        GROUP + "allow_private_urls = true\n" + reference("local", "http://127.0.0.1:8080/v1")
    )
    assert (
        load_settings(env_file=None).groups["core"].references[0].base_url.startswith("http://127")
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"api": "gemini"}, "must be 'anthropic', 'openai-chat' or 'openai-responses'"),
        ({"timeout_s": 0}, "must be > 0"),
        ({"max_tokens": 0}, "must be >= 1"),
        ({"colour": "blue"}, "unknown setting"),
    ],
)
def test_bad_reference_fields_name_the_field(extra: dict[str, object], message: str) -> None:
    api = str(extra.pop("api", "anthropic"))
    Path("tribunal.toml").write_text(
        GROUP + reference("r", "https://api.example.com", api, **extra)
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(env_file=None)
    assert message in caught.value.lines[0] and "groups.core.references.0" in caught.value.lines[0]


def test_a_key_pasted_into_key_env_is_refused_without_echoing_it() -> None:
    secret = "sk-ant-api03-verysecret"
    Path("tribunal.toml").write_text(
        GROUP + reference("r", "https://api.example.com").replace('"REF_KEY"', f'"{secret}"')
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(env_file=None)
    assert "key_env" in caught.value.lines[0] and secret not in str(caught.value)


def test_two_references_with_one_name_are_refused() -> None:
    Path("tribunal.toml").write_text(
        GROUP + reference("r", "https://a.example.com") + reference("r", "https://b.example.com")
    )
    with pytest.raises(SettingsError, match="two are named 'r'"):
        load_settings(env_file=None)


def test_the_arbiter_may_not_share_a_named_model_unless_allowed() -> None:
    base = GROUP + '[groups.core.owner]\nmodel = "m-x"\n[groups.core.arbiter]\nmodel = "m-x"\n'
    Path("tribunal.toml").write_text(base)
    with pytest.raises(SettingsError, match="arbiter.model 'm-x' is also the owner's"):
        load_settings(env_file=None)
    Path("tribunal.toml").write_text(base + "allow_same_model = true\nswap_check = true\n")
    arbiter = load_settings(env_file=None).groups["core"].arbiter
    assert arbiter.allow_same_model and arbiter.swap_check


def test_doctor_lists_the_references_and_their_missing_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/tribunal-test/docker.sock")
    _no_proxy(monkeypatch)
    Path("tribunal.toml").write_text(GROUP + reference("one", "https://api.example.com"))
    out = io.StringIO()
    run_doctor(None, out=out, env_file=None)
    lines = dict(line.split(": ", 1) for line in out.getvalue().splitlines())
    assert lines["references"] == "core/one: set REF_KEY"
    monkeypatch.setenv("REF_KEY", "k")
    out = io.StringIO()
    run_doctor(None, out=out, env_file=None)
    lines = dict(line.split(": ", 1) for line in out.getvalue().splitlines())
    assert lines["references"] == (
        "ok (core/one (anthropic, https://api.example.com)); addresses checked at each "
        "connection (core)"
    )


@pytest.mark.parametrize("variable", ["SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN", "tribunal_db"])
def test_a_platform_token_can_never_be_a_reference_key(variable: str) -> None:
    Path("tribunal.toml").write_text(
        GROUP + reference("r", "https://api.example.com").replace('"REF_KEY"', f'"{variable}"')
    )
    with pytest.raises(SettingsError, match="is not a model API key"):
        load_settings(env_file=None)
