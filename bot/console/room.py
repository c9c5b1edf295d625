"""The console room's input side: typed lines in, `Inbound` events and commands to the engine.

Each task lives in its own room `RoomRef("console", "local", <n>)`. Commands: /approve, /reject
(answer the open escalation), /choose N or the bare number N (pick option N of an open question
that offers options; the engine's own `choose` command, so the engine checks the number), /stop,
/status, /arbitrate [now] [note] (read by the engine's own command parser, as a mention on Slack
or Discord is), /help, /quit; /debate, /resolve and /arena (or the bare words) open a
deliberation protocol's task; any other line is a message (the task, when no task is open; an
answer, when the task waits for you). At end of input the room waits until the engine is idle
(done, or waiting for a person), then ends.

Lockstep: when stdin is not a terminal, each line is handled only after the engine went idle
after the previous one, so a script like "task / /approve" answers the escalation the task raises
rather than racing it. On a terminal you can type while the agents work (e.g. /stop).

The room talks to the engine only (`EngineLike`), never to the store.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.console.lines import LineReader
from bot.console.screen import ConsolePlatform
from rooms.base.model import Inbound, RoomRef, Task
from rooms.base.records import Escalation
from rooms.core.registry import by_command, specs

PLATFORM = "console"
CHANNEL = "local"

# One command per line (issue 27 #6: one 300-character line was hard to read in a terminal);
# the protocols' lines come from the registry, as each declares itself.
_COMMANDS = [
    ("/approve, /reject", "answer the open escalation"),
    ("/choose N, or N", "pick option N of the open question"),
    ("/stop", "close the task"),
    ("/status", "where the task is"),
    ("/arbitrate [now] [what to look at]", "call the arbiter"),
]
_LAST = [
    ("/help", "this list"),
    ("/quit", "leave (the task stays open for the next start)"),
]


def _help() -> str:
    """The console's commands, and the protocols' command words as the registry declares them."""
    openers = [(f"/{s.opening}", s.summary or "open one") for s in specs() if s.command]
    rows = [*_COMMANDS, *openers, *_LAST]
    lines = [
        f"  {left:<21}  {right}" if len(left) <= 21 else f"  {left}   {right}"
        for left, right in rows
    ]
    return "\n".join(["commands:", *lines, "any other line is a message to the room"])


HELP = _help()

# Commands the engine reads itself (rooms.commands.parse), with the rest of the line: the console
# hands the whole line over, so every platform shares one parser.
ENGINE_COMMANDS = ("/arbitrate", "/choose")


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
        self._commands: dict[str, Callable[[], Awaitable[bool]]] = {
            "/approve": lambda: self._answer("approve"),
            "/reject": lambda: self._answer("reject"),
            "/stop": self._stop,
            "/status": self._status,
            "/help": self._help,
            "/quit": self._quit,
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
        word = text.split()[0].lower()
        if text.startswith("/") and by_command(word[1:]) is None:
            if word in ENGINE_COMMANDS:
                room = self.room or await self._room_for_message()
                await self.engine.handle(self._inbound(room, text=text))
                return True
            command = self._commands.get(word)
            if command is None:
                self.platform.write(f"unknown command {text.split()[0]}; /help lists them")
                return True
            return await command()
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

    async def _answer(self, action: str) -> bool:
        escalation = self.platform.latest_escalation or await self._open_escalation()
        if escalation is None or self.room is None:
            self.platform.write(f"nothing to {action}: no question is waiting for you")
            return True
        await self.engine.handle(self._inbound(self.room, action=action, value=escalation))
        return True

    async def _open_escalation(self) -> str | None:
        """The open question of this room's task, for a console restarted after it was shown."""
        escalation = await self.engine.open_escalation(self.room) if self.room else None
        return str(escalation.id) if escalation else None

    async def _stop(self) -> bool:
        if self.room is None or await self.engine.open_task_in(self.room) is None:
            self.platform.write("no open task to stop")
            return True
        await self.engine.handle(self._inbound(self.room, text="stop"))
        return True

    async def _status(self) -> bool:
        if self.room is None:
            self.platform.write("no task yet: type one")
        else:
            self.platform.say(await self.engine.status_text(self.room))
        return True

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
