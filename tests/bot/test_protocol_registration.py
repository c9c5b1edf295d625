"""A protocol declares itself once (rooms.core.registry.ProtocolSpec) and everything that lists
protocols reads the declaration: its settings section with its limits, the group policy that
hands them to it, the prompts a group may replace, the console's and the chat's help.

The protocol here is the tests' relay (tests/rooms/relay_protocol.py), which no file of rooms/
or bot/ names. It registers before the settings are read, as a package of its own would when
imported; a fresh interpreter makes that order real (this process has read the settings long
ago), and prints what it saw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import dataclasses, json

import rooms
from rooms.core.registry import ProtocolSpec, register
from tests.rooms.relay_protocol import RELAY


@dataclasses.dataclass(frozen=True)
class RelayLimits:
    hops: int = 4

    def __post_init__(self) -> None:
        if self.hops < 1:
            raise ValueError("hops must be at least 1")


register(ProtocolSpec(RELAY, limits=RelayLimits, prompt_roles=("relay-left",), usage="<topic>"))

import bot.platforms
from bot.console.room import HELP
from bot.policies import SettingsPolicies
from bot.settings import SettingsError, load_settings
from rooms.base.model import GroupPolicy, RoomRef
from rooms.commands import help_text

settings = load_settings(env_file=None)
policy = SettingsPolicies(settings).for_room(RoomRef("console", "local", "1"))
out = {
    "hops": policy.limits("relay", RelayLimits).hops,
    "default_hops": GroupPolicy("g").limits("relay", RelayLimits).hops,
    "prompt": policy.prompt_overrides.get("relay-left"),
    "console_help": HELP,
    "chat_help": help_text(policy),
}
open("tribunal.toml", "w").write("[console.relay]\\nhops = 0\\n")
try:
    load_settings(env_file=None)
except SettingsError as exc:
    out["refused"] = str(exc)
print(json.dumps(out))
"""


def test_a_registered_protocol_gets_its_settings_policy_prompts_and_help(tmp_path: Path) -> None:
    prompt = tmp_path / "left.md"
    prompt.write_text("# You are left\n", encoding="utf-8")
    (tmp_path / "tribunal.toml").write_text(
        f'[console.relay]\nhops = 7\n[console.prompts]\nrelay-left = "{prompt}"\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert (seen["hops"], seen["default_hops"]) == (7, 4)
    assert seen["prompt"] == str(prompt.resolve())
    assert "/relay <topic>" in seen["console_help"]
    assert "`relay <topic>`" in seen["chat_help"]
    assert "console.relay: hops must be at least 1" in seen["refused"]
