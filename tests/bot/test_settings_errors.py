"""Settings that cannot be used: each SettingsError line names the field and what is wrong with
it, and never shows a secret's value."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import SettingsError, load_settings
from tests.bot.test_settings import write

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
        "no file could be committed",
        "[console]\ncommit_max_file_mb = 0\n",
        {},
        "settings: console.commit_max_file_mb: must be >= 1 (got 0)",
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
