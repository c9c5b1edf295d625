"""Settings: layering, the fixed names of DESIGN §11, groups, and errors that name the field."""

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
from rooms.model import AgentConfig, Thresholds


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- layering -----------------------------------------------------------------------------------


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
    monkeypatch.setenv("TRIBUNAL_DOCKER__CONCURRENCY", "3")
    s = load_settings()
    assert (s.docker.image, s.docker.mem_limit, s.docker.concurrency) == ("from-toml:1", "1g", 3)


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
    monkeypatch.setenv("TRIBUNAL_CONSOLE__APPROVERS", '["bob", "carol"]')
    assert load_settings().console.approvers == ["bob", "carol"]


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


# -- bad settings: SettingsError lines name the field ---------------------------------------------

BAD = [
    (
        "unknown agent type",
        '[groups.backend]\nplatform = "slack"\nchannel = "C1"\n[groups.backend.reviewer]\n'
        'agent = "gpt"\n',
        {},
        "settings: groups.backend.reviewer.agent: must be 'claude' or 'codex' (got 'gpt')",
    ),
    (
        # `command` runs the engine's own checks: no role is played by it
        "the engine's command runner as a role",
        '[console.owner]\nagent = "command"\n',
        {},
        "settings: console.owner.agent: must be 'claude' or 'codex' (got 'command')",
    ),
    (
        "unknown deliberation agent",
        '[console.deliberation]\nagent = "gemini"\n',
        {},
        "settings: console.deliberation.agent: must be 'claude' or 'codex' (got 'gemini')",
    ),
    (
        "unknown key in the deliberation section",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\ndeliberation = { modle = "x" }\n',
        {},
        "settings: groups.b.deliberation.modle: unknown setting",
    ),
    (
        "unknown deliberation agent from the environment",
        "",
        {"TRIBUNAL_CONSOLE__DELIBERATION__AGENT": "gpt"},
        "settings: console.deliberation.agent: must be 'claude' or 'codex' (got 'gpt')",
    ),
    (
        "negative threshold",
        "[console.thresholds]\nround_cap = -1\n",
        {},
        "settings: console.thresholds.round_cap: must be >= 1 (got -1)",
    ),
    (
        "similarity above one",
        "[console.thresholds]\nfindings_similarity = 1.5\n",
        {},
        "settings: console.thresholds.findings_similarity: must be <= 1 (got 1.5)",
    ),
    (
        "bad type in the environment",
        "",
        {"TRIBUNAL_HTTP_PORT": "eighty"},
        "settings: http_port (TRIBUNAL_HTTP_PORT): must be a whole number (got 'eighty')",
    ),
    (
        "bad backend",
        "",
        {"TRIBUNAL_BACKEND": "kubernetes"},
        "settings: backend (TRIBUNAL_BACKEND): must be 'auto', 'local' or 'docker' "
        "(got 'kubernetes')",
    ),
    (
        "missing prompt file",
        '[console.prompts]\narbiter = "/nonexistent/arbiter.md"\n',
        {},
        "settings: console.prompts: prompt file not found: arbiter: /nonexistent/arbiter.md",
    ),
    (
        "prompt for an unknown role",
        '[console.prompts]\njudge = "/etc/hostname"\n',
        {},
        "settings: console.prompts.judge",
    ),
    (
        "missing workspace",
        'console.workspace = "/nonexistent/ws"\n',
        {},
        "settings: console.workspace: not an existing folder: /nonexistent/ws",
    ),
    (
        "malformed toml",
        "[console\nowner = 1\n",
        {},
        "settings: tribunal.toml: not valid TOML: ",
    ),
    (
        "unknown top-level key",
        "colour = 'blue'\n",
        {},
        "settings: tribunal.toml: colour: unknown setting",
    ),
    (
        "unknown key in a section",
        '[slack]\nbot_tokn = "x"\n',
        {},
        "settings: tribunal.toml: slack.bot_tokn: unknown setting",
    ),
    (
        "unknown key in a group",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\nreviewr = "codex"\n',
        {},
        "settings: groups.b.reviewr: unknown setting",
    ),
    (
        "group without a platform",
        '[groups.b]\nchannel = "C1"\n',
        {},
        "settings: groups.b.platform: required",
    ),
    (
        "unknown platform",
        '[groups.b]\nplatform = "irc"\nchannel = "C1"\n',
        {},
        "settings: groups.b.platform: must be 'slack' or 'discord' (got 'irc')",
    ),
    (
        "two groups on one channel",
        '[groups.a]\nplatform = "slack"\nchannel = "C1"\n'
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\n',
        {},
        "settings: groups: groups.a and groups.b are both slack channel 'C1'",
    ),
    (
        "a group named console",
        '[groups.console]\nplatform = "slack"\nchannel = "C1"\n',
        {},
        "use the [console] section",
    ),
    (
        "negative timeout from .env-style variable",
        "",
        {"TRIBUNAL_CONSOLE__TIMEOUTS__IDLE_S": "-5"},
        "settings: console.timeouts.idle_s: must be > 0 (got '-5')",
    ),
    (
        "negative retention",
        "[tribunal]\nretention_days = -1\n",
        {},
        "settings: retention_days (TRIBUNAL_RETENTION_DAYS): must be >= 0 (got -1)",
    ),
    (
        "retention past a century",
        "",
        {"TRIBUNAL_RETENTION_DAYS": "36501"},
        "settings: retention_days (TRIBUNAL_RETENTION_DAYS): must be <= 36500 (got '36501')",
    ),
    (
        "retention in fractions of a day",
        "retention_days = 1.5\n",
        {},
        "settings: retention_days (TRIBUNAL_RETENTION_DAYS): must be a whole number (got 1.5)",
    ),
    (
        "retention as a switch",
        "[tribunal]\nretention_days = true\n",
        {},
        "settings: retention_days (TRIBUNAL_RETENTION_DAYS): must be a whole number of days, 0 to"
        " keep forever (got True)",
    ),
    (
        "a wrong token type does not echo the value",
        "slack_bot_token = 12345\n",
        {},
        "settings: SLACK_BOT_TOKEN: input should be a valid string (got '<hidden>')",
    ),
    (
        "containers retired at once",
        "[docker]\nretire_idle_s = 0\n",
        {},
        "settings: docker.retire_idle_s: must be > 0 (got 0)",
    ),
    (
        "no container per group",
        "[docker]\nmax_containers_per_group = 0\n",
        {},
        "settings: docker.max_containers_per_group: must be >= 1 (got 0)",
    ),
]


@pytest.mark.parametrize(("toml", "env", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_settings_name_the_field(
    monkeypatch: pytest.MonkeyPatch, toml: str, env: dict[str, str], expected: str
) -> None:
    write(Path("tribunal.toml"), toml)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert any(expected in line for line in caught.value.lines), caught.value.lines
    assert "12345" not in str(caught.value)
