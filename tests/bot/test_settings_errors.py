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
    (
        "no open task allowed",
        "[console]\nmax_open_tasks_per_person = 0\n",
        {},
        "settings: console.max_open_tasks_per_person: must be >= 1 (got 0)",
    ),
    # Settings that would silently weaken a limit or leave nobody to decide (issue 24, item 14).
    (
        "an infinite turn timeout",
        "[console.timeouts]\nhard_s = inf\n",
        {},
        "settings: console.timeouts.hard_s: must be a finite number (got inf)",
    ),
    (
        "an infinite idle timeout from a variable",
        "",
        {"TRIBUNAL_CONSOLE__TIMEOUTS__IDLE_S": "inf"},
        "settings: console.timeouts.idle_s: must be a finite number (got 'inf')",
    ),
    (
        "an infinite cost ceiling",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\n[groups.b.thresholds]\n'
        "max_cost_usd = inf\n",
        {},
        "settings: groups.b.thresholds.max_cost_usd: must be a finite number (got inf)",
    ),
    (
        "a cost ceiling that overflows to infinity",
        "",
        {"TRIBUNAL_CONSOLE__THRESHOLDS__MAX_COST_USD": "1e999"},
        "settings: console.thresholds.max_cost_usd: must be a finite number (got '1e999')",
    ),
    (
        "a wall-time ceiling that is not a number",
        "[console.thresholds]\nmax_wall_s = nan\n",
        {},
        "settings: console.thresholds.max_wall_s: must be a finite number (got nan)",
    ),
    (
        "an infinite container timeout",
        "[docker]\nhard_timeout_s = inf\n",
        {},
        "settings: docker.hard_timeout_s: must be a finite number (got inf)",
    ),
    (
        "an infinite arena time",
        "[console.arena]\nhard_time_s = inf\n",
        {},
        "settings: console.arena.hard_time_s: must be a finite number (got inf)",
    ),
    (
        "an infinite reference timeout",
        '[console]\nallow_private_urls = true\n[[console.references]]\nname = "r"\n'
        'api = "anthropic"\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\nkey_env = "K"\n'
        "usd_per_mtok_in = inf\n",
        {},
        "settings: console.references.0.usd_per_mtok_in: must be a finite number (got inf)",
    ),
    (
        "no memory limit",
        '[docker]\nmem_limit = "0"\n',
        {},
        "settings: docker.mem_limit: must be at least 6m: the engine refuses less, and 0 would "
        "mean no limit (got '0')",
    ),
    (
        "a negative memory limit",
        '[docker]\nmem_limit = "-1"\n',
        {},
        "settings: docker.mem_limit: must be a size such as '4g' or '512m' (bytes, or k, m, g) "
        "(got '-1')",
    ),
    (
        "a memory limit in an unknown unit",
        '[docker]\nmem_limit = "4t"\n',
        {},
        "settings: docker.mem_limit: must be a size such as '4g' or '512m' (bytes, or k, m, g) "
        "(got '4t')",
    ),
    (
        "a Slack approver by display name",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\napprovers = ["@alice"]\n',
        {},
        "settings: groups.b: approvers: '@alice' can match nobody: use a Slack user id such as "
        "U024BE7LH (U… or W…)",
    ),
    (
        "a Slack approver by e-mail address",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\napprovers = ["alice@example.com"]\n',
        {},
        "settings: groups.b: approvers: 'alice@example.com' can match nobody: use a Slack user "
        "id such as U024BE7LH (U… or W…)",
    ),
    (
        "a Slack approver with a leading space",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\napprovers = [" U024BE7LH"]\n',
        {},
        "settings: groups.b: approvers: ' U024BE7LH' can match nobody: use a Slack user id such "
        "as U024BE7LH (U… or W…)",
    ),
    (
        "a Slack approver in lower case",
        '[groups.b]\nplatform = "slack"\nchannel = "C1"\napprovers = ["u024be7lh"]\n',
        {},
        "settings: groups.b: approvers: 'u024be7lh' can match nobody: use a Slack user id such "
        "as U024BE7LH (U… or W…)",
    ),
    (
        "a wildcard approver",
        '[groups.b]\nplatform = "discord"\nchannel = "1"\napprovers = ["*"]\n',
        {},
        "settings: groups.b: approvers: '*' can match nobody: use a Discord user or role id (17 "
        "to 20 digits)",
    ),
    (
        "a Discord approver by name",
        '[groups.b]\nplatform = "discord"\nchannel = "1"\napprovers = ["@alice"]\n',
        {},
        "settings: groups.b: approvers: '@alice' can match nobody: use a Discord user or role id "
        "(17 to 20 digits)",
    ),
    (
        "a Discord approver as a mention",
        '[groups.b]\nplatform = "discord"\nchannel = "1"\napprovers = ["<@1100000000000000003>"]\n',
        {},
        "settings: groups.b: approvers: '<@1100000000000000003>' can match nobody: use a "
        "Discord user or role id (17 to 20 digits)",
    ),
    (
        "console approvers that are not the console user",
        '[console]\napprovers = ["@alice", " alice", "*"]\n',
        {},
        "settings: console: approvers: none of '@alice', ' alice', '*' is the console user "
        "'alice' (console.user), so nobody in the console room could answer; list the console "
        "user or leave approvers unset",
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
