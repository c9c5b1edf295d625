"""The console room: Tribunal in a terminal, with you as the human (DESIGN §7).

A plain line-oriented program, no curses, so it works the same with stdin piped (tests,
scripts). Each task lives in its own room `RoomRef("console", "local", <n>)`; the engine and
store are the same ones Slack and Discord use. What the engine posts is printed labelled by
persona; a progress message edited in place is re-printed as a status line (overwritten on a
terminal, one line per change otherwise); an escalation shows how to answer it.

Commands: /approve, /reject (answer the open escalation), /stop, /status, /help, /quit; any
other line is a message (the task, when no task is open; an answer, when the task waits for
you). At end of input the console waits until the engine is idle (done, or waiting for a
person), then exits.

Lockstep: when stdin is not a terminal, each line is handled only after the engine went idle
after the previous one, so a script like "task / /approve" answers the escalation the task
raises rather than racing it. On a terminal you can type while the agents work (e.g. /stop).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import io
import itertools
import os
import shutil
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, TextIO

from bot import render
from bot.app import open_app
from bot.settings import Settings
from rooms.model import Inbound, Outbound, RoomRef
from rooms.ports import Runner
from rooms.store import Store

PLATFORM = "console"
CHANNEL = "local"
HELP = (
    "commands: /approve, /reject (answer the open escalation), /stop (close the task), "
    "/status, /help, /quit; any other line is a message to the room"
)


class EngineLike(Protocol):
    """The part of rooms.engine.Engine the console uses."""

    async def handle(self, inbound: Inbound) -> None: ...
    async def idle(self) -> None: ...
    async def status_text(self, room: RoomRef) -> str: ...


@dataclass
class _Printed:
    message_id: str
    persona: str
    text: str


@dataclass
class ConsolePlatform:
    """rooms.ports.Platform for a terminal: prints each message once, edits as status lines."""

    out: TextIO
    tty: bool = False
    latest_escalation: str | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _by_outbox: dict[int, str] = field(default_factory=dict)
    _messages: dict[str, _Printed] = field(default_factory=dict)
    _last_line_of: str | None = None  # message id whose one-line status is the last line shown

    async def deliver(self, message: Outbound) -> str | None:
        if message.outbox_id and message.outbox_id in self._by_outbox:
            return self._by_outbox[message.outbox_id]  # a redelivery: already on screen
        if message.edit_of is not None and message.edit_of in self._messages:
            self._edit(self._messages[message.edit_of], message)
            return message.edit_of
        message_id = f"console-{next(self._ids)}"
        self._messages[message_id] = _Printed(message_id, message.persona, message.text)
        if message.outbox_id:
            self._by_outbox[message.outbox_id] = message_id
        text = render.plain(message)
        escalation = render.escalation_id(message.actions)
        if escalation is not None:
            self.latest_escalation = escalation
            text += "\n" + render.answer_hint(message.actions)
        self.write(text)
        if "\n" not in text and len(text) < self._width():
            self._last_line_of = message_id
        return message_id

    def _edit(self, printed: _Printed, message: Outbound) -> None:
        if message.text == printed.text:
            return  # nothing new to show: keep piped output free of repeats
        printed.text = message.text
        line = render.plain(Outbound(room=message.room, text=message.text, persona=printed.persona))
        line = line.splitlines()[0] if line else ""
        width = self._width()
        if self.tty and self._last_line_of == printed.message_id and len(line) < width:
            # Cursor up one line, clear it, rewrite: the status line is edited in place.
            self.out.write("\x1b[1A\r\x1b[K" + line + "\n")
            self.out.flush()
        else:
            self.write(line)
            self._last_line_of = printed.message_id if len(line) < width else None

    def write(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()
        self._last_line_of = None

    def _width(self) -> int:
        return shutil.get_terminal_size((100, 24)).columns if self.tty else 1 << 30


class LineReader:
    """Lines of a text stream, read on a daemon thread and handed to the event loop.

    A thread rather than the loop's pipe reader: it works for terminals, pipes and regular files
    alike. It reads the raw file descriptor, not the stream's buffer: a thread blocked inside a
    buffered read holds the buffer's lock, and anything else touching the stream (closing it,
    interpreter shutdown) would then wait for it forever."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, name="console-stdin", daemon=True).start()

    def _lines(self) -> Iterator[str]:
        try:
            fd = self._stream.fileno()
        except (OSError, AttributeError, io.UnsupportedOperation):  # e.g. io.StringIO
            yield from self._stream
            return
        decoder = codecs.getincrementaldecoder(self._stream.encoding or "utf-8")("replace")
        pending = ""
        while chunk := os.read(fd, 65536):
            pending += decoder.decode(chunk)
            *complete, pending = pending.split("\n")
            yield from complete
        pending += decoder.decode(b"", final=True)
        if pending:
            yield pending  # a last line without a newline still counts

    def _pump(self) -> None:
        try:
            for line in self._lines():
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line.rstrip("\r\n"))
        except (OSError, ValueError):  # the stream was closed under us: treat it as EOF
            pass
        finally:
            # RuntimeError: the loop is already closed, nobody is reading any more.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def next(self) -> str | None:
        return await self._queue.get()


class ConsoleRoom:
    """The console's input loop: lines in, Inbound events to the engine."""

    def __init__(
        self,
        engine: EngineLike,
        store: Store,
        platform: ConsolePlatform,
        *,
        user: str,
        lockstep: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.store = store
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

    async def run(self, lines: LineReader) -> None:
        self.room = await self._resumable_room()
        where = f"room {self.room.thread}" if self.room else "a new room"
        self.platform.write(f"Tribunal console, you are {self.user}; {where}. /help for commands.")
        if self.room is not None:  # a task left open by an earlier run: say where it stands
            self.platform.write(await self.engine.status_text(self.room))
        while True:
            line = await lines.next()
            if line is None:
                await self.engine.idle()  # finish what runs; a task waiting for you stays open
                return
            if not await self.handle_line(line):
                return
            if self.lockstep:
                await self.engine.idle()

    async def handle_line(self, line: str) -> bool:
        """Handle one typed line; False when the console should quit."""
        text = line.strip()
        if not text:
            return True
        if text.startswith("/"):
            command = self._commands.get(text.split()[0].lower())
            if command is None:
                self.platform.write(f"unknown command {text.split()[0]}; {HELP}")
                return True
            return await command()
        room = await self._room_for_message()
        await self.engine.handle(self._inbound(room, text=text))
        return True

    async def _answer(self, action: str) -> bool:
        escalation = self.platform.latest_escalation or await self._open_escalation()
        if escalation is None or self.room is None:
            self.platform.write(f"nothing to {action}: no question is waiting for you")
            return True
        await self.engine.handle(self._inbound(self.room, action=action, value=escalation))
        return True

    async def _open_escalation(self) -> str | None:
        """The open question of this room's task, for a console restarted after it was shown."""
        task = await self.store.open_task_in(self.room) if self.room else None
        escalation = await self.store.open_escalation(task.id) if task else None
        return str(escalation.id) if escalation else None

    async def _stop(self) -> bool:
        if self.room is None or await self.store.open_task_in(self.room) is None:
            self.platform.write("no open task to stop")
            return True
        await self.engine.handle(self._inbound(self.room, text="stop"))
        return True

    async def _status(self) -> bool:
        if self.room is None:
            self.platform.write("no task yet: type one")
        else:
            self.platform.write(await self.engine.status_text(self.room))
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
        if self.room is not None and await self.store.open_task_in(self.room) is not None:
            return self.room
        if self.room is None or await self.store.latest_task_in(self.room) is not None:
            self.room = await self._fresh_room()
            self.platform.latest_escalation = None
        return self.room

    async def _resumable_room(self) -> RoomRef | None:
        """The room of the newest open console task, so a restarted console continues it."""
        prefix = f"{PLATFORM}:{CHANNEL}:"
        open_here = [t for t in await self.store.open_tasks() if t.room.startswith(prefix)]
        if not open_here:
            return None
        return RoomRef(PLATFORM, CHANNEL, open_here[-1].room.removeprefix(prefix))

    async def _fresh_room(self) -> RoomRef:
        """The lowest-numbered room past the used ones (gallop, then bisect: O(log n) reads)."""

        async def used(n: int) -> bool:
            return await self.store.latest_task_in(RoomRef(PLATFORM, CHANNEL, str(n))) is not None

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


async def chat(
    settings: Settings,
    *,
    stdin: TextIO,
    stdout: TextIO,
    runner: Runner | None = None,
    lockstep: bool | None = None,
) -> int:
    """Run the console room until /quit, end of input or SIGTERM. `lockstep`: None = when
    stdin is not a TTY."""
    tty = stdout.isatty() and stdin.isatty()
    platform = ConsolePlatform(stdout, tty=tty)
    with _stop_on_sigterm() as terminated:
        try:
            async with open_app(settings, platform, runner=runner) as app:
                room = ConsoleRoom(
                    app.engine,
                    app.store,
                    platform,
                    user=settings.console.user,
                    lockstep=(not stdin.isatty()) if lockstep is None else lockstep,
                )
                await room.run(LineReader(stdin))
        except asyncio.CancelledError:
            if not terminated.is_set():
                raise
            # Stopped on request: the engine was stopped on the way out (a running turn is
            # marked interrupted and runs again on the next start). That is a clean exit.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
    return 0


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[threading.Event]:
    """SIGTERM (a service manager stopping us) cancels the console like /quit would, so the
    engine and store are closed properly instead of the process dying mid-write."""
    terminated = threading.Event()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_sigterm() -> None:
        terminated.set()
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / no support
        yield terminated
        return
    try:
        yield terminated
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
