"""Which of the Discord bot's shards this process connects (README "Running at scale").

Discord splits a bot's servers ("guilds") over `shard_count` Gateway connections: a guild's
events all go to shard `(guild_id >> 22) % shard_count`. With `[discord] shard_count` and
`shard_ids` set, this process opens only its shards' connections, so several bot processes share
one bot: each receives only the messages and clicks of its shards' guilds (and so opens each
task exactly once), while posting stays plain REST, which any process may do for any guild.
Unset, the process connects every shard, as many as Discord recommends (one process).

Ownership is static, written in each process's settings, rather than claimed through the store:
discord.py cannot add a shard to a running client, so a shard moving to another process would
mean that process reconnecting every shard it had; and Discord does not hold a shard's events
for whoever takes it over, so a claim after a lease would not save the events of the lease
either. A process that dies is restarted by its service manager (compose's `restart:`) with the
same shards; meanwhile its tasks and posts are taken over by the others through the store.

No discord import here: the settings check runs when the settings load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator

if TYPE_CHECKING:
    from bot.settings import Settings


def _listed(value: Any) -> Any:
    # DISCORD_SHARD_IDS=0,2 as well as the JSON list [0, 2] (or one id alone).
    if isinstance(value, int):  # a bool too: refused as an id then
        return [value]
    if isinstance(value, str) and not value.strip().startswith("["):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _no_switch(value: Any) -> Any:
    # TOML `true` would otherwise be read as shard 1 (or a count of 1): a typo, not a number.
    if isinstance(value, bool):
        raise ValueError(f"must be a whole number (got {value})")
    return value


ShardNumber = Annotated[int, BeforeValidator(_no_switch)]  # `[discord] shard_count`
# `[discord] shard_ids`: a TOML list, or the variable as JSON or "0,2".
ShardIds = Annotated[list[ShardNumber], BeforeValidator(_listed)]


def shard_of(guild_id: int, shard_count: int) -> int:
    """The shard that receives a guild's events (Discord's formula)."""
    return (guild_id >> 22) % shard_count


@dataclass(frozen=True)
class Shards:
    """`count` None: as many as Discord recommends; `ids` None: every one of them."""

    count: int | None = None
    ids: tuple[int, ...] | None = None

    def describe(self) -> str:
        if self.count is None:
            return "every shard (as many as Discord recommends; one process serves the bot)"
        if self.ids is None:
            return f"every shard of {self.count}"
        owned = ", ".join(str(i) for i in self.ids)
        return f"shard{'s' if len(self.ids) > 1 else ''} {owned} of {self.count}"


ALL_SHARDS = Shards()  # one process for the whole bot


def shards_of(settings: Settings) -> Shards:
    """This process's shards (the settings were checked by `shard_problems` when loaded)."""
    count = settings.platform_setting("discord", "shard_count")
    ids = settings.platform_setting("discord", "shard_ids")
    return Shards(count, tuple(ids) if ids is not None else None)


def shard_problems(settings: Settings) -> list[str]:
    """What is wrong with `[discord] shard_count` and `shard_ids` (PlatformSpec.check)."""
    count = settings.platform_setting("discord", "shard_count")
    ids = settings.platform_setting("discord", "shard_ids")
    where = "discord.shard_count (DISCORD_SHARD_COUNT)"
    if count is not None and count < 1:
        return [f"{where}: must be >= 1 (got {count})"]
    if ids is None:
        return []
    which = "discord.shard_ids (DISCORD_SHARD_IDS)"
    if count is None:
        return [
            f"{which}: set discord.shard_count too, the same in every process "
            "(a guild's shard depends on it)"
        ]
    if not ids:
        return [f"{which}: empty: list the shards this process connects, or leave it unset for all"]
    problems = []
    outside = sorted({i for i in ids if not 0 <= i < count})
    if outside:
        shown = ", ".join(str(i) for i in outside)
        problems.append(
            f"{which}: {shown} not a shard of {count} (shard ids run from 0 to {count - 1})"
        )
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        problems.append(f"{which}: {', '.join(str(i) for i in twice)} listed twice")
    return problems
