"""Which variables reach a container exec (no engine needed): platform tokens never, whatever
layer offers them; model credentials and runner settings do; later layers win."""

from __future__ import annotations

import pytest

from container.docker_backend import DEFAULT_ENV, exec_env


@pytest.mark.parametrize(
    "name, passes",
    [
        ("ANTHROPIC_API_KEY", True),
        ("ANTHROPIC_BASE_URL", True),
        ("OPENAI_API_KEY", True),
        ("TRIBUNAL_CODEX_BASE_URL", True),
        ("TRIBUNAL_TASK", True),
        ("SLACK_BOT_TOKEN", False),
        ("SLACK_APP_TOKEN", False),
        ("SLACK_SIGNING_SECRET", False),
        ("slack_bot_token", False),
        ("DISCORD_BOT_TOKEN", False),
        ("DISCORD_API_URL", False),
        ("MATRIX_BOT_TOKEN", False),
        ("TEAMS_APP_TOKEN", False),
        ("OTHER_SIGNING_SECRET", False),
        ("DOCKER_HOST", False),
    ],
)
def test_deny_list(name: str, passes: bool) -> None:
    env, refused = exec_env({name: "value"})
    assert (name in env) is passes
    assert (name in refused) is not passes


def test_later_layers_win_and_defaults_quiet_the_agents() -> None:
    env, refused = exec_env(DEFAULT_ENV, {"ANTHROPIC_API_KEY": "a"}, {"ANTHROPIC_API_KEY": "b"})
    assert env["ANTHROPIC_API_KEY"] == "b" and refused == []
    assert env["DISABLE_TELEMETRY"] == "1"
    assert env["TRIBUNAL_CODEX_SANDBOX"] == "external"  # the container is the sandbox
