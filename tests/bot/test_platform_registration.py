"""A platform declares itself once (bot/adapter.py PlatformSpec) and the bot reads the
declaration: its settings and section, its groups and approvers, the doctor's platforms line,
and its secrets, which never reach a runner and are never a reference model's key.

The platform here is a made-up Teams, declared by the test alone: nothing in bot/, container/
or rooms/ names it. Its secrets have names no built-in rule knows: `TEAMS_APP_PASSWORD`, and the
Bot Framework's `MICROSOFT_APP_PASSWORD`, which does not even carry the platform's prefix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

import bot.adapter
from bot.adapter import PlatformSetting, PlatformSpec
from bot.backend import BackendChoice, make_backend
from bot.doctor.config import check_platforms
from bot.settings import load_settings
from bot.settings_references import ReferenceSettings
from container.local import LocalBackend
from runners.protocol import RunEvent, RunRequest, RunSpec
from tests.fakes import bad_runners

SECRETS = ("TEAMS_APP_PASSWORD", "MICROSOFT_APP_PASSWORD")
TEAMS = PlatformSpec(
    "teams",
    factory=lambda settings: None,
    settings=(
        PlatformSetting("app_id", "TEAMS_APP_ID"),
        PlatformSetting("app_password", "TEAMS_APP_PASSWORD", secret=True),
        PlatformSetting("bot_password", "MICROSOFT_APP_PASSWORD", secret=True),
    ),
    token="app_id",
    title="Teams",
    approver=(r"[0-9a-f-]{36}", "an Azure AD object id"),
)


@pytest.fixture
def teams() -> Iterator[PlatformSpec]:
    bot.adapter.register(TEAMS)
    try:
        yield TEAMS
    finally:
        bot.adapter.unregister(TEAMS.name)


async def test_a_declared_secret_never_reaches_a_runner(
    teams: PlatformSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    backend = make_backend(load_settings(env_file=None), BackendChoice("local", "test"))
    assert isinstance(backend, LocalBackend)
    backend.command = bad_runners.command("env_dump")  # prints the environment it was given
    spec = RunSpec(
        group="g",
        agent="claude",
        request=RunRequest(role="owner", prompt="do the thing"),
        workspace=str(tmp_path),
        env={"ANTHROPIC_API_KEY": "sk-run", **{name: "the-platform-secret" for name in SECRETS}},
        idle_timeout_s=5.0,
        hard_timeout_s=20.0,
    )
    events: list[RunEvent] = [event async for event in backend.run(spec)]
    final = events[-1]
    assert final.kind == "final" and final.structured is not None
    env = final.structured["env"]
    assert env["ANTHROPIC_API_KEY"] == "sk-run"  # the run's own variables still arrive
    assert [name for name in SECRETS if name in env] == []
    assert "the-platform-secret" not in env.values()


@pytest.mark.parametrize("variable", SECRETS)
def test_a_declared_secret_is_refused_as_a_reference_key(
    teams: PlatformSpec, variable: str
) -> None:
    with pytest.raises(ValidationError, match=f"{variable} is not a model API key"):
        ReferenceSettings(
            name="peer", api="anthropic", base_url="https://peer.test", model="m", key_env=variable
        )


def test_without_the_declaration_the_names_are_ordinary_keys() -> None:
    # The same check with no Teams declared: the refusal above comes from the declaration.
    for variable in SECRETS:
        ReferenceSettings(
            name="peer", api="anthropic", base_url="https://peer.test", model="m", key_env=variable
        )


def test_the_declaration_makes_its_settings_groups_and_doctor_line(
    teams: PlatformSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAMS_APP_PASSWORD", "from-the-environment")
    Path("tribunal.toml").write_text(
        '[teams]\napp_id = "app-1"\n'
        '[groups.ops]\nplatform = "teams"\nchannel = "19:abc"\n'
        'approvers = ["0b6f3c2e-1d2a-4c5b-9e8f-7a6b5c4d3e2f"]\n',
        encoding="utf-8",
    )
    settings = load_settings(env_file=None)
    assert settings.platform_value("teams", "app_id") == "app-1"
    assert settings.platform_value("teams", "app_password") == "from-the-environment"
    assert "teams" in settings.platforms_configured()
    assert "from-the-environment" not in repr(settings)  # a secret is never shown
    assert settings.groups["ops"].platform == "teams"
    check = check_platforms(settings)
    assert check.ok and "teams" in check.line

    Path("tribunal.toml").write_text(
        '[groups.ops]\nplatform = "teams"\nchannel = "19:abc"\napprovers = ["alice"]\n',
        encoding="utf-8",
    )
    with pytest.raises(Exception, match="'alice' can match nobody: use an Azure AD object id"):
        load_settings(env_file=None)
    monkeypatch.delenv("TEAMS_APP_PASSWORD")
    Path("tribunal.toml").write_text(
        '[groups.ops]\nplatform = "teams"\nchannel = "19:abc"\n', encoding="utf-8"
    )
    check = check_platforms(load_settings(env_file=None))
    assert not check.ok and "set TEAMS_APP_ID for the teams groups (ops)" in check.line
