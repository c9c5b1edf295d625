"""The deliberation protocols' limits as group settings: defaults from rooms/, overrides per
group, and errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.policies import SettingsPolicies
from bot.settings import SettingsError, load_settings
from rooms.arena.limits import ArenaLimits
from rooms.base.model import RoomRef
from rooms.debate.limits import DebateLimits
from rooms.resolve.limits import ResolveLimits


def test_defaults_are_the_rooms_defaults() -> None:
    s = load_settings(env_file=None)
    assert (s.console.arena, s.console.debate, s.console.resolve) == (
        ArenaLimits(),
        DebateLimits(),
        ResolveLimits(),
    )


def test_a_group_overrides_its_limits() -> None:
    Path("tribunal.toml").write_text(
        "[console.arena]\nmax_nudges = 1\npanel_max = 4\n"
        "[console.debate]\ncautious_side = 'advocate'\n"
        "weights = { evidence = 40, logic = 20, counter_evidence = 10, quantification = 20, "
        "reversibility = 10 }\n"
        "[console.resolve]\nmax_talk_rounds = 1\ntest_timeout_s = 30\ntests_total_s = 90\n",
        encoding="utf-8",
    )
    policy = SettingsPolicies(load_settings(env_file=None)).for_room(
        RoomRef("console", "local", "1")
    )
    assert policy is not None
    debate, resolve = policy.limits("debate", DebateLimits), policy.limits("resolve", ResolveLimits)
    assert policy.limits("arena", ArenaLimits) == ArenaLimits(max_nudges=1, panel_max=4)
    assert debate.weights["evidence"] == 40 and debate.cautious_side == "advocate"
    assert resolve.max_talk_rounds == 1
    assert (resolve.test_timeout_s, resolve.tests_total_s) == (30, 90)


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ("[console.arena]\nmax_nudge = 1\n", "console.arena.max_nudge"),
        ("[console.arena]\npanel_min = 6\n", "panel_min must be at least 2 and at most panel_max"),
        (
            "[console.debate]\nweights = { evidence = 40, logic = 20, counter_evidence = 20, "
            "quantification = 20, reversibility = 10 }\n",
            "weights must sum to 100, not 110",
        ),
        ("[console.debate]\nweights = { evidence = 100 }\n", "weights must name exactly"),
        ("[console.resolve]\nmax_talk_rounds = 0\n", "max_talk_rounds must be at least 1"),
        (
            "[console.resolve]\ntest_timeout_s = 300\ntests_total_s = 60\n",
            "tests_total_s must be at least test_timeout_s",
        ),
    ],
)
def test_bad_limits_name_the_field(toml: str, says: str) -> None:
    Path("tribunal.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(SettingsError) as info:
        load_settings(env_file=None)
    assert says in str(info.value)


def test_every_prompt_a_group_may_replace_is_a_prompt_we_ship() -> None:
    from importlib import resources

    from rooms.core.registry import prompt_roles

    shipped = {f.name.removesuffix(".md") for f in resources.files("prompts").iterdir()}
    # The references' prompt is ours alone: a group names its references, not their prompt.
    assert set(prompt_roles()) == shipped - {"reference", "__init__.py", "__pycache__"}


def test_a_protocol_prompt_is_overridden_per_group(tmp_path: Path) -> None:
    mine = tmp_path / "referee.md"
    mine.write_text("# My referee\n", encoding="utf-8")
    Path("tribunal.toml").write_text(
        f'[console.prompts]\n"debate-referee" = "{mine}"\n', encoding="utf-8"
    )
    policy = SettingsPolicies(load_settings(env_file=None)).for_room(
        RoomRef("console", "local", "1")
    )
    assert policy is not None and policy.prompt_overrides == {"debate-referee": str(mine)}
