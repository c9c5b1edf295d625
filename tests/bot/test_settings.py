"""Settings: layering, the fixed names of DESIGN §11, groups, the deliberation agent; the
errors that name the field are in test_settings_errors.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.policies import group_policy
from bot.settings import (
    CONSOLE_GROUP,
    Settings,
    SettingsError,
    load_settings,
)
from container.slots import default_turns_at_once
from rooms.base.model import AgentConfig, Thresholds


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- layering -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("db", "url", "path"),
    [
        (None, None, ".tribunal/tribunal.db"),
        ("/srv/t.db", None, "/srv/t.db"),
        ("postgresql://bot:pw@db:5432/tribunal", "postgresql://bot:pw@db:5432/tribunal", None),
        ("postgres://bot@/tribunal?host=/run/pg", "postgres://bot@/tribunal?host=/run/pg", None),
    ],
)
def test_the_database_is_a_file_or_a_postgres_url(
    db: str | None, url: str | None, path: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if db is not None:
        monkeypatch.setenv("TRIBUNAL_DB", db)
    s = load_settings(env_file=None)
    assert s.db_url == url  # a URL stays whole (a Path would fold its "//")
    assert s.database == (url or path)


def test_a_path_given_in_code_is_a_sqlite_file() -> None:
    # Settings built in code (the dashboard's tests did) pass a Path, as before the field took URLs.
    s = load_settings(env_file=None, db=Path("/srv/t.db"))
    assert (s.db_url, s.database) == (None, "/srv/t.db")


def test_defaults_without_any_source() -> None:
    s = load_settings(env_file=None)
    assert s.data == Path(".tribunal")
    assert s.db_path == Path(".tribunal/tribunal.db")
    assert s.backend == "auto"
    assert s.groups == {}
    assert s.console.owner.agent == "claude"
    assert s.console.thresholds.to_thresholds() == Thresholds()
    assert s.platforms_configured() == []


@pytest.mark.parametrize(
    ("toml", "dotenv", "env", "init", "expected"),
    [
        (None, None, None, None, 6),
        ("3", None, None, None, 3),
        ("3", "4", None, None, 4),
        ("3", "4", "5", None, 5),
        ("3", "4", "5", 7, 7),
        (None, None, "5", None, 5),
        ("3", None, "5", None, 5),
    ],
)
def test_precedence_init_env_dotenv_toml_defaults(
    monkeypatch: pytest.MonkeyPatch,
    toml: str | None,
    dotenv: str | None,
    env: str | None,
    init: int | None,
    expected: int,
) -> None:
    if toml:
        write(Path("tribunal.toml"), f"[console.thresholds]\nround_cap = {toml}\n")
    if dotenv:
        write(Path(".env"), f"TRIBUNAL_CONSOLE__THRESHOLDS__ROUND_CAP={dotenv}\n")
    if env:
        monkeypatch.setenv("TRIBUNAL_CONSOLE__THRESHOLDS__ROUND_CAP", env)
    overrides = {"console": {"thresholds": {"round_cap": init}}} if init else {}
    s = load_settings(**overrides)
    assert s.console.thresholds.round_cap == expected


def test_nested_sections_merge_across_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    write(Path("tribunal.toml"), '[docker]\nimage = "from-toml:1"\nmem_limit = "2g"\n')
    write(Path(".env"), "TRIBUNAL_DOCKER__MEM_LIMIT=1g\n")
    monkeypatch.setenv("TRIBUNAL_DOCKER__PIDS_LIMIT", "3")
    s = load_settings()
    assert (s.docker.image, s.docker.mem_limit, s.docker.pids_limit) == ("from-toml:1", "1g", 3)


def test_turns_at_once_is_one_cap_for_both_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(env_file=None).limits.turns_at_once == default_turns_at_once()
    write(Path("tribunal.toml"), "[limits]\nturns_at_once = 3\n")
    assert load_settings(env_file=None).limits.turns_at_once == 3
    monkeypatch.setenv("TRIBUNAL_LIMITS__TURNS_AT_ONCE", "0")
    with pytest.raises(SettingsError, match=r"limits.turns_at_once: must be >= 1"):
        load_settings(env_file=None)


def test_the_docker_sections_old_cap_says_where_it_went() -> None:
    write(Path("tribunal.toml"), "[docker]\nconcurrency = 3\n")
    with pytest.raises(SettingsError, match=r"moved to \[limits\] turns_at_once"):
        load_settings(env_file=None)


def test_retention_defaults_to_30_days_and_0_keeps_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings(env_file=None).retention_days == 30
    monkeypatch.setenv("TRIBUNAL_RETENTION_DAYS", "0")
    assert load_settings(env_file=None).retention_days == 0


def test_env_file_none_skips_dotenv() -> None:
    write(Path(".env"), "TRIBUNAL_BACKEND=docker\n")
    assert load_settings().backend == "docker"
    assert load_settings(env_file=None).backend == "auto"


def test_config_option_reads_another_file(tmp_path: Path) -> None:
    other = write(tmp_path / "elsewhere.toml", 'tribunal_data = "/srv/tribunal"\n')
    write(Path("tribunal.toml"), 'tribunal_data = "/ignored"\n')
    assert load_settings(other).data == Path("/srv/tribunal")
    assert load_settings().data == Path("/ignored")


def test_config_option_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="config file not found"):
        load_settings(tmp_path / "nope.toml")


# -- the fixed names of DESIGN §11 ------------------------------------------------------------

NAMES = [
    # (environment variable = flat toml key in lower case, toml section, key in section, value)
    ("TRIBUNAL_DB", "tribunal", "db", "/x/t.db"),
    ("TRIBUNAL_DATA", "tribunal", "data", "/x/d"),
    ("TRIBUNAL_HTTP_PORT", "tribunal", "http_port", "8080"),
    ("TRIBUNAL_RETENTION_DAYS", "tribunal", "retention_days", "7"),
    ("SLACK_BOT_TOKEN", "slack", "bot_token", "xoxb"),
    ("SLACK_APP_TOKEN", "slack", "app_token", "xapp"),
    ("SLACK_SIGNING_SECRET", "slack", "signing_secret", "s3cr3t"),
    ("SLACK_API_URL", "slack", "api_url", "http://127.0.0.1:1/api/"),
    ("DISCORD_BOT_TOKEN", "discord", "bot_token", "dtok"),
    ("DISCORD_API_URL", "discord", "api_url", "http://127.0.0.1:2/api"),
    ("ANTHROPIC_API_KEY", "anthropic", "api_key", "sk-ant"),
    ("ANTHROPIC_BASE_URL", "anthropic", "base_url", "http://127.0.0.1:3"),
    ("OPENAI_API_KEY", "openai", "api_key", "sk-oai"),
    ("OPENAI_BASE_URL", "openai", "base_url", "http://127.0.0.1:4/v1"),
    ("DOCKER_HOST", "docker", "host", "unix:///run/podman.sock"),
]


def _value(s: Settings, env: str) -> str:
    value = getattr(s, env.lower().removeprefix("tribunal_"))
    return str(value.get_secret_value() if isinstance(value, SecretStr) else value)


def _toml_value(value: str) -> str:
    return value if value.isdigit() else f'"{value}"'


@pytest.mark.parametrize(("env", "section", "key", "value"), NAMES)
def test_each_fixed_name_from_env_and_both_toml_forms(
    monkeypatch: pytest.MonkeyPatch, env: str, section: str, key: str, value: str
) -> None:
    write(Path("tribunal.toml"), f"{env.lower()} = {_toml_value(value)}\n")
    assert _value(load_settings(), env) == value
    write(Path("tribunal.toml"), f"[{section}]\n{key} = {_toml_value(value)}\n")
    assert _value(load_settings(), env) == value
    write(Path("tribunal.toml"), f"[{section}]\n{key} = {_toml_value(value + '0')}\n")
    monkeypatch.setenv(env, value)  # the environment beats the file
    assert _value(load_settings(), env) == value


def test_tokens_are_secret_in_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    s = load_settings()
    assert "very-secret" not in repr(s) and "very-secret" not in str(s)
    assert s.platforms_configured() == ["slack"]


def test_unknown_tribunal_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBUNAL_SOMETHING_ELSE", "x")
    assert load_settings().backend == "auto"


# -- groups -------------------------------------------------------------------------------------

GROUPS = """
[groups.backend]
platform = "slack"
channel = "C123"
workspace = "{ws}"
approvers = ["U1", "U2"]
budgets = {{ max_agent_turns = 12 }}
timeouts = {{ idle_s = 30, hard_s = 600 }}
recent_turns = 4
prompts = {{ reviewer = "{prompt}" }}

[groups.backend.owner]
agent = "codex"
model = "gpt-9"

[groups.backend.thresholds]
round_cap = 3
max_cost_usd = 2.5

[groups.web]
platform = "discord"
channel = "998877"
"""


def test_groups_from_toml(tmp_path: Path) -> None:
    prompt = write(tmp_path / "strict.md", "be strict")
    ws = tmp_path / "ws"  # beside the working directory: the data folder is not inside it
    ws.mkdir()
    write(Path("tribunal.toml"), GROUPS.format(ws=ws, prompt=prompt))
    s = load_settings()
    backend = s.groups["backend"]
    assert (backend.platform, backend.channel, backend.workspace) == ("slack", "C123", ws)
    assert (backend.owner.agent, backend.owner.model) == ("codex", "gpt-9")
    assert backend.reviewer.agent == "claude"
    assert backend.thresholds.round_cap == 3 and backend.thresholds.max_cost_usd == 2.5
    assert backend.thresholds.stagnation_repeats == Thresholds().stagnation_repeats
    assert backend.budgets.max_agent_turns == 12
    assert (backend.timeouts.idle_s, backend.timeouts.hard_s) == (30, 600)
    assert backend.prompts == {"reviewer": prompt}
    assert s.agents_in_use() == {"claude", "codex"}
    names = [name for name, *_ in s.all_groups()]
    assert names == [CONSOLE_GROUP, "backend", "web"]


def test_console_group_defaults_to_the_console_user_as_approver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings().console.approvers == ["alice"]
    monkeypatch.setenv("TRIBUNAL_CONSOLE__APPROVERS", '["carol", "alice"]')
    assert load_settings().console.approvers == ["carol", "alice"]


def test_console_user_defaults_to_the_login_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRIBUNAL_CONSOLE__USER")
    monkeypatch.setenv("LOGNAME", "zoe")
    monkeypatch.setenv("USER", "zoe")
    assert load_settings().console.user == "zoe"


def test_console_workspace_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("TRIBUNAL_CONSOLE__WORKSPACE", str(ws))
    assert load_settings().console.workspace == ws


# -- the deliberation actors' agent: the arbiter's unless set ------------------------------------

ARBITER = '[console.arbiter]\nagent = "codex"\nmodel = "o9"\n'
DELIBERATION = [
    # (id, tribunal.toml, environment, the expert's agent, agents in use)
    ("unset: the arbiter's", ARBITER, {}, AgentConfig("codex", "o9"), {"claude", "codex"}),
    ("unset, arbiter unset", "", {}, AgentConfig("claude", None), {"claude"}),
    (
        "a section",
        '[console.deliberation]\nagent = "codex"\nmodel = "gpt-9"\n',
        {},
        AgentConfig("codex", "gpt-9"),
        {"claude", "codex"},
    ),
    (
        "inline, the model only",
        '[console]\ndeliberation = { model = "sonnet-x" }\n' + ARBITER,
        {},
        AgentConfig("claude", "sonnet-x"),
        {"claude", "codex"},
    ),
    (
        "from the environment",
        "",
        {"TRIBUNAL_CONSOLE__DELIBERATION__AGENT": "codex"},
        AgentConfig("codex", None),
        {"claude", "codex"},
    ),
    (
        "a group's",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\n'
        '[groups.b.deliberation]\nagent = "codex"\n',
        {},
        AgentConfig("codex", None),
        {"claude", "codex"},
    ),
]


@pytest.mark.parametrize(
    ("toml", "env", "expert", "in_use"),
    [d[1:] for d in DELIBERATION],
    ids=[d[0] for d in DELIBERATION],
)
def test_the_deliberation_agent_defaults_to_the_arbiters(
    monkeypatch: pytest.MonkeyPatch,
    toml: str,
    env: dict[str, str],
    expert: AgentConfig,
    in_use: set[str],
) -> None:
    write(Path("tribunal.toml"), toml)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    name, _, _, group = list(settings.all_groups())[-1]
    policy = group_policy(name, group)
    for role in ("expert:skeptic", "researcher:1", "advocate", "referee", "positions", "designer"):
        assert policy.agent_for(role) == expert, role
    assert policy.agent_for("arbiter") == policy.arbiter  # the pair's roles keep their own
    assert policy.agent_for("owner") == AgentConfig("claude", None)
    assert settings.agents_in_use() == in_use  # so the doctor checks the deliberation agent too


@pytest.mark.parametrize(
    ("toml", "approvers"),
    [
        (
            'platform = "slack"\napprovers = ["U024BE7LH", "W0ENTERPRISE"]\n',
            ["U024BE7LH", "W0ENTERPRISE"],
        ),
        (
            'platform = "discord"\napprovers = ["1100000000000000003", "81384788765712384"]\n',
            ["1100000000000000003", "81384788765712384"],
        ),
    ],
    ids=["slack", "discord"],
)
def test_approver_ids_of_each_platforms_shape_load(toml: str, approvers: list[str]) -> None:
    write(Path("tribunal.toml"), f'[groups.g]\nchannel = "C1"\n{toml}')
    assert load_settings(env_file=None).groups["g"].approvers == approvers


@pytest.mark.parametrize(
    ("size", "limit"), [("4g", "4g"), ("512m", "512m"), ("6291456", "6291456"), ("2GB", "2GB")]
)
def test_memory_limits_the_engine_reads_load(size: str, limit: str) -> None:
    write(Path("tribunal.toml"), f'[docker]\nmem_limit = "{size}"\n')
    assert load_settings(env_file=None).docker.mem_limit == limit
