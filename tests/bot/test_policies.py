"""Settings → GroupPolicy, and which room belongs to which group."""

from __future__ import annotations

from pathlib import Path

from bot.policies import SettingsPolicies
from bot.settings import load_settings
from rooms.base.model import AgentConfig, GroupPolicy, RoomRef, Thresholds
from rooms.base.open_caps import OpenCaps
from rooms.core.registry import specs

TOML = """
[console]
workspace = "{ws}"
[console.arbiter]
agent = "codex"
model = "o9"

[groups.backend]
platform = "slack"
channel = "C123"
approvers = ["U1"]
recent_turns = 3
commit_max_file_mb = 2
max_open_tasks = 8
max_open_tasks_per_person = 2
prompts = {{ owner = "{prompt}" }}
budgets = {{ max_agent_turns = 9 }}
timeouts = {{ idle_s = 12.5, hard_s = 99 }}
thresholds = {{ round_cap = 4, max_arbitrations = 1 }}

[groups.web]
platform = "discord"
channel = "42"
"""


def test_rooms_map_to_their_group(tmp_path: Path) -> None:
    prompt = tmp_path / "owner.md"
    prompt.write_text("you own it")
    ws = tmp_path / "ws"  # beside the working directory: the data folder is not inside it
    ws.mkdir()
    Path("tribunal.toml").write_text(TOML.format(ws=ws, prompt=prompt))
    policies = SettingsPolicies(load_settings(env_file=None))

    console = policies.for_room(RoomRef("console", "local", "7"))
    assert console == GroupPolicy(
        name="console",
        workspace=str(ws),
        arbiter=AgentConfig("codex", "o9"),
        approvers=frozenset({"alice"}),
        address="type",  # the console room: nothing to mention
        # every protocol's limits, at their defaults
        protocol_limits={spec.name: spec.limits() for spec in specs() if spec.limits},
    )

    backend = policies.for_room(RoomRef("slack", "C123", "1700000000.0001"))
    assert backend is not None
    assert backend.name == "backend" and backend.workspace is None
    assert backend.approvers == frozenset({"U1"})
    assert backend.open_caps == OpenCaps(per_channel=8, per_person=2)
    assert backend.thresholds == Thresholds(round_cap=4, max_arbitrations=1)
    assert backend.prompt_overrides == {"owner": str(prompt)}
    assert (backend.idle_timeout_s, backend.hard_timeout_s) == (12.5, 99)
    assert (backend.max_agent_turns, backend.recent_turns) == (9, 3)
    assert backend.max_commit_file_bytes == 2 * 1024 * 1024
    assert backend.agent_for("owner") == AgentConfig("claude", None)

    web = policies.for_room(RoomRef("discord", "42", "555"))
    assert web is not None and web.name == "web"


def test_rooms_of_no_group_are_not_ours() -> None:
    Path("tribunal.toml").write_text('[groups.a]\nplatform = "slack"\nchannel = "C1"\n')
    policies = SettingsPolicies(load_settings(env_file=None))
    assert policies.for_room(RoomRef("slack", "C2", "1")) is None
    assert policies.for_room(RoomRef("discord", "C1", "1")) is None  # same id, other platform
    assert policies.for_room(RoomRef("console", "elsewhere", "1")) is None
    assert [p.name for p in policies.groups()] == ["console", "a"]


def test_relative_paths_become_absolute(tmp_path: Path) -> None:
    Path("repo").mkdir()
    Path("owner.md").write_text("prompt")
    Path("tribunal.toml").write_text(
        '[console]\nworkspace = "repo"\nprompts = { owner = "owner.md" }\n'
    )
    policy = SettingsPolicies(load_settings(env_file=None)).for_room(
        RoomRef("console", "local", "1")
    )
    assert policy is not None
    assert policy.workspace == str(Path.cwd() / "repo")
    assert policy.prompt_overrides == {"owner": str(Path.cwd() / "owner.md")}
