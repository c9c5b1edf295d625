"""The console room's input side: typed lines in, `Inbound` events and commands to the engine.

Each task lives in its own room `RoomRef("console", "local", <n>)`. Commands are the command
table's (rooms/core/command_table.py), typed after a "/": the console hands the line to the engine
as a mention on Slack or Discord is, so the engine's one parser and one dispatch answer it, the
same words, the same checks and the same replies on every platform. The console keeps only what
is its own: /help (the table's rows, printed as a list), /quit, the bare number N for `choose N`
while the question offers options, and its answers before it has a room (no task yet).
/debate, /resolve and /arena (or the bare words) open a deliberation protocol's task; any other
line is a message (the task, when no task is open; an answer, when the task waits for you). At
end of input the room waits until the engine is idle (done, or waiting for a person), then ends.

Lockstep: when stdin is not a terminal, each line is handled only after the engine went idle
after the previous one, so a script like "task / /approve" answers the escalation the task raises
rather than racing it. On a terminal you can type while the agents work (e.g. /stop).

The room talks to the engine only (`EngineLike`), never to the store.
"""

from __future__ import annotations

import itertools
import time
import unicodedata
from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.console.lines import LineReader
from bot.console.screen import ConsolePlatform
from rooms.base import words
from rooms.base.model import Inbound, RoomRef, Task
from rooms.base.records import Escalation
from rooms.base.words import APPROVE, CHOOSE, COMMAND_WORDS, QUIT, REJECT, STATUS, STOP
from rooms.core.command_table import command_rows, opener_rows, parse, typed_word
from rooms.core.registry import by_command

PLATFORM = "console"
CHANNEL = "local"

# The console's own answers while it has no room yet (before its first task: a chat channel
# always exists, the console's room is made by the first task), so it does not make a room only
# to be told there is nothing in it.
_BEFORE_ANY_TASK = {
    STATUS: "no task yet: type one",
    APPROVE: "nothing to approve: no question is waiting for you",
    REJECT: "nothing to reject: no question is waiting for you",
    STOP: "no open task to stop",
}
_QUIT_ROW = ("/quit", "leave (the task stays open for the next start)")


def _help() -> str:
    """The console's help: the command table's rows (rooms/core/command_table.py), the one the
    chat's help is made of, each typed after a "/", and the protocols' words from the registry;
    one command a line (issue 27 #6)."""
    commands = [
        (row.typed("/") + (", or N" if row.words == (CHOOSE,) else ""), row.help)
        for row in command_rows()
    ]
    openers = [(row.typed("/"), row.help) for row in opener_rows()]
    rows = [*commands[:-1], *openers, *commands[-1:], _QUIT_ROW]
    lines = [
        f"  {left:<21}  {right}" if len(left) <= 21 else f"  {left}   {right}"
        for left, right in rows
    ]
    return "\n".join(["commands:", *lines, "any other line is a message to the room"])


HELP = _help()

# The commands the engine answers (every one of the table but the help, which the console prints
# in its own form): the console hands the whole line over, as a mention on Slack or Discord does,
# so every platform shares one parser and one dispatch.
ENGINE_COMMANDS = tuple(f"/{word}" for word in COMMAND_WORDS if word != words.HELP)


class EngineLike(Protocol):
    """The part of rooms.engine.Engine the console uses."""

    async def handle(self, inbound: Inbound) -> None: ...
    async def idle(self) -> None: ...
    async def status_text(self, room: RoomRef) -> str: ...
    async def open_task_in(self, room: RoomRef) -> Task | None: ...
    async def latest_task_in(self, room: RoomRef) -> Task | None: ...
    async def open_escalation(self, room: RoomRef) -> Escalation | None: ...
    async def open_rooms(self, platform: str) -> list[RoomRef]: ...


class ConsoleRoom:
    """The console's input loop: lines in, Inbound events to the engine."""

    def __init__(
        self,
        engine: EngineLike,
        platform: ConsolePlatform,
        *,
        user: str,
        lockstep: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.platform = platform
        self.user = user
        self.lockstep = lockstep
        self.room: RoomRef | None = None
        self._session = f"{int(clock() * 1000):x}"
        self._events = itertools.count(1)
        # The console's own commands; every other one of the table goes to the engine.
        self._commands: dict[str, Callable[[], Awaitable[bool]]] = {
            f"/{words.HELP}": self._help,
            f"/{QUIT}": self._quit,
        }

    async def greet(self) -> None:
        """The banner; a task left open by an earlier run is continued, and said where it is."""
        self.room = await self._resumable_room()
        where = f"room {self.room.thread}" if self.room else "a new room"
        self.platform.write(f"Tribunal console, you are {self.user}; {where}. /help for commands.")
        if self.room is not None:
            self.platform.say(await self.engine.status_text(self.room))

    async def run(self, lines: LineReader) -> None:
        """Handle lines until /quit or end of input."""
        while True:
            line = await lines.next()
            if line is None:
                await self.engine.idle()  # finish what runs; a task waiting for you stays open
                return
            self.platform.typed()
            if not await self.handle_line(line):
                return
            if self.lockstep:
                await self.engine.idle()
            self.platform.show_prompt()

    async def handle_line(self, line: str) -> bool:
        """Handle one typed line; False when the console should quit."""
        text = line.strip()
        if not text:
            return True
        first = text.split()[0]
        slash = unicodedata.normalize("NFKC", first).startswith("/")  # "／" too
        if slash and by_command(typed_word(first)) is None:
            own = self._commands.get(f"/{typed_word(first)}")
            if own is not None:
                return await own()
            word, _, _ = parse(text)  # the engine's own parser: what it reads, the console reads
            if word is None:
                self.platform.write(f"unknown command {first}; /help lists them")
                return True
            if self.room is None and word in _BEFORE_ANY_TASK:
                self.platform.write(_BEFORE_ANY_TASK[word])
                return True
            room = self.room or await self._room_for_message()
            await self.engine.handle(self._inbound(room, text=text))
            return True
        if text.isdecimal() and await self._offers_options():
            text = f"choose {text}"  # the numbered list's answer: the engine checks the number
        room = await self._room_for_message()
        await self.engine.handle(self._inbound(room, text=text))
        return True

    async def _offers_options(self) -> bool:
        """A bare number picks an option only while this room's open question offers some; on
        any other question (or none) it is a message like any other."""
        escalation = await self.engine.open_escalation(self.room) if self.room else None
        return escalation is not None and bool(escalation.options)

    async def _help(self) -> bool:
        self.platform.write(HELP)
        return True

    async def _quit(self) -> bool:
        return False

    def _inbound(
        self, room: RoomRef, *, text: str = "", action: str | None = None, value: str | None = None
    ) -> Inbound:
        return Inbound(
            room=room,
            user=self.user,
            text=text,
            event_id=f"console:{self._session}:{next(self._events)}",
            mentions_bot=True,  # everything typed here is addressed to Tribunal
            action=action,
            action_value=value,
        )

    async def _room_for_message(self) -> RoomRef:
        """The current room while its task is open; after it closed, a fresh room."""
        if self.room is not None and await self.engine.open_task_in(self.room) is not None:
            return self.room
        if self.room is None or await self.engine.latest_task_in(self.room) is not None:
            self.room = await self._fresh_room()
            self.platform.latest_escalation = None
        return self.room

    async def _resumable_room(self) -> RoomRef | None:
        """The room of the newest open console task, so a restarted console continues it."""
        here = [r for r in await self.engine.open_rooms(PLATFORM) if r.channel == CHANNEL]
        return here[-1] if here else None

    async def _fresh_room(self) -> RoomRef:
        """The lowest-numbered room past the used ones (gallop, then bisect: O(log n) reads)."""

        async def used(n: int) -> bool:
            return await self.engine.latest_task_in(RoomRef(PLATFORM, CHANNEL, str(n))) is not None

        low, high = 0, 1  # room `low` is used (0 stands for "before the first"), `high` unknown
        while await used(high):
            low, high = high, high * 2
        while high - low > 1:
            middle = (low + high) // 2
            if await used(middle):
                low = middle
            else:
                high = middle
        return RoomRef(PLATFORM, CHANNEL, str(high))
