"""The engine: the tribunal's public face for `bot/` (and for tests).

It owns one driver coroutine per open task (never two in one process; across processes the
task's lease decides), the outbox deliverer, and the inbound handler. The store is the source of
truth, so `start` simply resumes every open task where the store says it stopped.

No task is left without a driver until the next restart: a driver that dies (a bug, a broken
database) is started again after a backoff (`restart_first_s`, doubling up to `restart_max_s`,
reset once it ends cleanly), and every `scan_s` the engine looks for open tasks of its platforms
that someone should act on, with no driver here and no live lease anywhere (their engine died),
and drives them. The same loop prunes the store past the retention (rooms/store/retention.py): once
at start, then hourly by the engine's clock.

Several engines on one database: a scan that passes over a task leased elsewhere looks again
when that lease ends (so a killed engine's task is picked up within one lease, not one scan),
and on PostgreSQL each engine listens to the store's wake-ups (LISTEN/NOTIFY,
rooms/store/listen.py): a task opened, changed or released elsewhere is driven at once by an
engine that serves it, a post enqueued elsewhere is delivered at once; the scan and the
deliverer's poll stay as the safety net.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Iterable

from rooms.base.machine import UnknownProtocol
from rooms.base.model import Inbound, RoomRef, Task
from rooms.base.ports import Clock, Platform, Policies, Runner, SignInLinks, WallClock
from rooms.base.records import Escalation
from rooms.commands import handle, stop_task
from rooms.core.context import Ctx
from rooms.core.driver import drive, removes_progress_of
from rooms.core.escalations import card_key
from rooms.core.outbox import Deliverer
from rooms.core.progress import close_open_progress
from rooms.core.registry import table_for
from rooms.core.status import status_text
from rooms.references.port import NoReferences, ReferencePool
from rooms.store import Store
from rooms.store.listen import RESYNC, parse
from rooms.store.retention import DEFAULT_RETENTION_DAYS, Pruner

log = logging.getLogger(__name__)
RESTART_FIRST_S = 1.0  # a dead driver's first restart; each further death doubles it
RESTART_MAX_S = 60.0
SCAN_S = 30.0  # how often open tasks without a driver are looked for
LEASE_MARGIN_S = 0.05  # a scan for a lease that ends comes this long after its end
WAKE_STAGGER_S = 0.002  # a woken engine waits this long per task it drives before it claims
WAKE_STAGGER_MAX_S = 0.2


class Engine:
    def __init__(
        self,
        store: Store,
        runner: Runner,
        platform: Platform,
        policies: Policies,
        *,
        clock: Clock | None = None,
        engine_id: str | None = None,
        lease_s: float = 30.0,
        data_dir: str | None = None,
        platforms: Iterable[str] | None = None,
        retention_days: int = DEFAULT_RETENTION_DAYS,
        references: ReferencePool | None = None,
    ) -> None:
        """`platforms`: the room platforms this process serves (its adapters'); it drives and
        delivers for those rooms only and leaves the others' tasks and posts to the process that
        serves them. None: every platform (a single-process setup, most tests).
        `retention_days`: how long the store keeps event ids, delivered posts and the usage
        rows of closed tasks (0: forever); a ValueError when not 0 to MAX_RETENTION_DAYS."""
        self.ctx = Ctx(
            store=store,
            runner=runner,
            platform=platform,
            policies=policies,
            clock=clock or WallClock(),
            engine_id=engine_id or f"engine-{uuid.uuid4().hex[:12]}",
            lease_s=lease_s,
            data_dir=data_dir,
            references=references or NoReferences(),
        )
        self.pruner = Pruner(store, self.ctx.clock, retention_days)
        self.outbox = Deliverer(self.ctx)
        self.ctx.wake_outbox = self.outbox.wake
        self.ctx.spawn = self._spawn
        self.platforms = frozenset(platforms) if platforms is not None else None
        self.outbox.platforms = self.platforms
        self._drivers: dict[int, asyncio.Task[None]] = {}
        self._kicked: set[int] = set()
        self._stopping = False
        self.restart_first_s = RESTART_FIRST_S
        self.restart_max_s = RESTART_MAX_S
        self.scan_s = SCAN_S
        self._failures: dict[int, int] = {}  # consecutive deaths of a task's driver
        self._restarts: dict[int, asyncio.TimerHandle] = {}
        self._scanner: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._rescan = asyncio.Event()  # a wake-up: scan now (_scan_now) or at _lease_ends
        self._scan_now = False
        self._watchers: set[asyncio.Task[None]] = set()  # reading a lease's end (_lease_elsewhere)
        self._lease_ends: float | None = None  # wall time the next foreign lease ends

    @property
    def engine_id(self) -> str:
        return self.ctx.engine_id

    async def start(self) -> None:
        """Resume every open task of the served platforms where it stopped and start delivering
        the outbox."""
        self._stopping = False
        self.outbox.start()
        for task in await self.ctx.store.open_tasks():
            if self.serves(task.room):
                self._spawn(task.id)
        self._scanner = asyncio.create_task(self._scan_forever(), name="tribunal-scan")
        wakes = self.ctx.store.wakes()
        if wakes is not None:
            self._listener = asyncio.create_task(self._listen(wakes), name="tribunal-listen")
            self.ctx.lease_elsewhere = self._lease_elsewhere

    async def stop(self) -> None:
        """Cancel the drivers (a running turn is marked interrupted and runs again on the next
        start) and the deliverer. The store stays consistent and open; its owner closes it."""
        self._stopping = True
        for timer in self._restarts.values():
            timer.cancel()
        self._restarts.clear()
        loops = [self._scanner, self._listener, *self._watchers]
        for loop in loops:
            if loop is not None:
                loop.cancel()
        await asyncio.gather(*(loop for loop in loops if loop is not None), return_exceptions=True)
        self._scanner = self._listener = None
        drivers = list(self._drivers.values())
        for driver in drivers:
            driver.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        await self.outbox.stop()

    async def handle(self, inbound: Inbound) -> None:
        await handle(self.ctx, inbound, self._cancel)

    async def idle(self) -> None:
        """Wait until no driver runs here and the outbox is empty."""
        while True:
            running = [d for d in self._drivers.values() if not d.done()]
            if running:
                await asyncio.wait(running)
                continue
            await self.outbox.flush()
            if not any(not d.done() for d in self._drivers.values()):
                return

    async def stop_task(self, task_id: int, by: str, event_id: str) -> bool:
        """Close an open task on behalf of `by`, who the caller has allowed to (the dashboard's
        operator): the same change, post and cancellation as `stop` in chat. False when the
        task is closed already or kept moving."""
        for _ in range(5):
            task = await self.ctx.store.task(task_id)
            if task is None or task.status == "closed":
                return False
            room = await self.ctx.store.room(task.room)
            if room is None:
                return False
            inbound = Inbound(room=room, user=by, event_id=event_id)
            if await stop_task(self.ctx, inbound, task, self._cancel):
                self.ctx.wake_outbox()
                return True
        return False

    @property
    def running(self) -> bool:
        """Started, not stopping, and its scanner alive (/healthz)."""
        scanner = self._scanner
        return not self._stopping and scanner is not None and not scanner.done()

    def offer_sign_in(self, links: SignInLinks | None) -> None:
        """The dashboard's sign-in links for `dashboard` in chat (None: the dashboard is off)."""
        self.ctx.sign_in = links

    async def status_text(self, room: RoomRef) -> str:
        return await status_text(self.ctx, room)

    # -- queries for adapters (they read the engine, never the store) ----------------------------

    async def open_task_in(self, room: RoomRef) -> Task | None:
        """The room's open task, if any (at most one per room)."""
        return await self.ctx.store.open_task_in(room)

    async def latest_task_in(self, room: RoomRef) -> Task | None:
        """The room's newest task, open or closed: None when the room was never used."""
        return await self.ctx.store.latest_task_in(room)

    async def open_escalation(self, room: RoomRef) -> Escalation | None:
        """The question waiting for a person in the room's open task, if any."""
        task = await self.ctx.store.open_task_in(room)
        return await self.ctx.store.open_escalation(task.id) if task else None

    def has_group(self, room: RoomRef) -> bool:
        """Whether the room is in a registered channel (a group's): the engine drops every event
        elsewhere, so an adapter that wants to say so to the person does it itself."""
        return self.ctx.policies.for_room(room) is not None

    async def seen_event(self, event_id: str) -> bool:
        """Whether an inbound event with this id was handled before (platforms replay events)."""
        return await self.ctx.store.seen_event(event_id)

    async def question_message(self, escalation_id: str) -> str | None:
        """What the adapter's `deliver` returned for an escalation's card (the question with
        its buttons), once delivered: how a decided card finds the card it replaces."""
        return await self.ctx.store.sent_message_id(card_key(escalation_id))

    async def open_rooms(self, platform: str) -> list[RoomRef]:
        """Rooms of `platform` with an open task, oldest task first."""
        rooms = []
        for task in await self.ctx.store.open_tasks():
            if _platform_of(task.room) == platform:
                room = await self.ctx.store.room(task.room)
                if room is not None:
                    rooms.append(room)
        return rooms

    def serves(self, room_key: str) -> bool:
        """Whether this process drives and delivers for the room (by its `RoomRef.key`)."""
        return self.platforms is None or _platform_of(room_key) in self.platforms

    # -- drivers ---------------------------------------------------------------------------------

    def _spawn(self, task_id: int) -> None:
        """Make sure a driver runs for the task. If one is finishing right now it is asked to look
        again, so a change made while it decided to stop is never missed."""
        if self._stopping:
            return
        current = self._drivers.get(task_id)
        if current is not None and not current.done():
            self._kicked.add(task_id)
            return
        pending = self._restarts.pop(task_id, None)
        if pending is not None:
            pending.cancel()  # a message came first: no need to wait for the backoff
        self._drivers[task_id] = asyncio.create_task(
            self._driver(task_id), name=f"tribunal-task-{task_id}"
        )

    async def _driver(self, task_id: int) -> None:
        me = asyncio.current_task()
        try:
            while True:
                self._kicked.discard(task_id)
                try:
                    await drive(self.ctx, task_id)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    # A bug or a broken database: leave the task as the store has it and start
                    # its driver again after a backoff (or at the next message).
                    log.exception("driver of task %s failed", task_id)
                    self._restart_later(task_id)
                    return
                self._failures.pop(task_id, None)
                if task_id not in self._kicked:  # no await between this check and the exit
                    return
        finally:
            self.ctx.stop_reasons.pop(task_id, None)
            if self._drivers.get(task_id) is me:
                del self._drivers[task_id]

    def _restart_later(self, task_id: int) -> None:
        if self._stopping:
            return
        failures = self._failures[task_id] = self._failures.get(task_id, 0) + 1
        delay = min(self.restart_first_s * 2 ** (failures - 1), self.restart_max_s)
        log.warning(
            "restarting the driver of task %s in %.1fs (failure %d)", task_id, delay, failures
        )
        previous = self._restarts.pop(task_id, None)
        if previous is not None:
            previous.cancel()
        self._restarts[task_id] = asyncio.get_running_loop().call_later(
            delay, self._restart_now, task_id
        )

    def _restart_now(self, task_id: int) -> None:
        self._restarts.pop(task_id, None)
        self._spawn(task_id)

    async def close_progress(self) -> int:
        """Edit every progress message of our rooms whose turn ended without it saying so (a
        crash, a stop, a refused edit) to its final state; returns how many were closed."""
        return await close_open_progress(
            self.ctx.store,
            self.ctx.platform,
            serves=lambda room: self.serves(room.key),
            removes=removes_progress_of,
        )

    async def _scan_forever(self) -> None:
        first = True
        while True:
            try:
                pruned = await self.pruner.maybe()
                if pruned is not None and pruned.total:
                    log.info("pruned past the retention: %s", pruned)
            except Exception:  # like a scan: the next hour tries again
                log.exception("pruning the store past the retention failed")
            await self._until_next_scan()
            if first:  # once the adapters are surely up; a message that fails now stays as it is
                first = False
                try:
                    await self.close_progress()
                except Exception:
                    log.exception("closing the progress messages left open failed")
            try:
                await self.scan()
            except Exception:  # a broken database now and then: the next scan tries again
                log.exception("scanning for tasks without a driver failed")

    async def _until_next_scan(self) -> None:
        """Sleep `scan_s`, or less: until the first lease held elsewhere that the last scan or
        a wake-up saw ends, or until a wake-up asks for a scan."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.scan_s
        while True:
            wait = deadline - loop.time()
            if self._lease_ends is not None:
                wait = min(wait, self._lease_ends - self.ctx.wall() + LEASE_MARGIN_S)
            if wait <= 0:
                return
            self._rescan.clear()
            try:
                async with asyncio.timeout(wait):
                    await self._rescan.wait()
            except TimeoutError:
                return
            if self._scan_now:  # else a lease to watch came: compute the wait again
                self._scan_now = False
                return

    def _lease_elsewhere(self, task_id: int) -> None:
        """A driver here found the task leased by another engine: look again when that lease
        ends (its engine may die), not before."""

        async def watch() -> None:
            extras = await self.ctx.store.task_extras(task_id)
            if extras is not None and extras["lease_until"] is not None:
                self._watch_lease(extras["lease_until"])

        watcher = asyncio.create_task(watch(), name=f"tribunal-lease-{task_id}")
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)

    def _watch_lease(self, until: float) -> None:
        if self._lease_ends is None or until < self._lease_ends:
            self._lease_ends = until
            self._rescan.set()

    async def _listen(self, wakes: AsyncIterator[str]) -> None:
        """Act on the store's wake-ups (see the module's docstring)."""
        async for payload in wakes:
            wake = parse(payload)
            if wake is None:
                continue
            if wake.kind == RESYNC:  # (re)connected: something may have been missed
                self._scan_now = True
                self._rescan.set()
                self.outbox.wake()
            elif not self.serves(wake.room):
                continue
            elif wake.kind == "outbox":
                if wake.lease_owner == "":  # else its engine delivers it (and woke its own)
                    self.outbox.wake()
            elif wake.lease_owner not in ("", self.engine_id):
                if wake.lease_until is not None:
                    self._watch_lease(wake.lease_until)  # its engine may die: look then
            elif wake.task_id not in self._drivers:
                # Every engine is woken: the less busy ones try first, so the tasks spread
                # by load across the processes (the lease decides among those that try).
                busy = sum(1 for d in self._drivers.values() if not d.done())
                delay = min(busy * WAKE_STAGGER_S, WAKE_STAGGER_MAX_S)
                asyncio.get_running_loop().call_later(delay, self._spawn, wake.task_id)

    async def scan(self) -> list[int]:
        """Drive every open task of our platforms that someone should act on, that no driver
        here runs (or waits to restart) and whose lease nobody holds; returns their ids. The
        earliest end of the leases held elsewhere is when the next scan comes at the latest."""
        picked = []
        now = self.ctx.wall()
        self._lease_ends = None
        for task in await self.ctx.store.open_tasks():
            if not self.serves(task.room) or _nobody_acts(task):
                continue
            if task.id in self._drivers or task.id in self._restarts:
                continue
            extras = await self.ctx.store.task_extras(task.id)
            if extras is None:
                continue  # gone meanwhile
            until = extras["lease_until"]
            if extras["lease_owner"] is not None and until is not None and until >= now:
                self._watch_lease(until)
                continue  # another engine drives it
            picked.append(task.id)
            self._spawn(task.id)
        return picked

    def _cancel(self, task_id: int, reason: str) -> None:
        driver = self._drivers.get(task_id)
        if driver is not None and not driver.done():
            self.ctx.stop_reasons[task_id] = reason
            driver.cancel()


def _nobody_acts(task: Task) -> bool:
    """Whether the task waits for a person (or is of a kind this process does not run)."""
    try:
        return table_for(task.protocol).actor(task.status) is None
    except UnknownProtocol:
        return True


def _platform_of(room_key: str) -> str:
    return room_key.partition(":")[0]  # RoomRef.key is "platform:channel:thread"


__all__ = ["Engine", "Store"]
