"""The workspace hash kept between turns: after the first pass, a turn reads only what changed.

Stat'ing every file is what a full pass costs even when nothing is read (50k files: ~0.2 s in
git's own C, more from Python), so a tree is watched with inotify (rooms/work/inotify.py): the
kernel names every folder entry created, deleted, renamed, written, truncated or chmod'ed, and
only those are looked at again; the folder digests above them are recomputed
(rooms/work/hashed_tree.py). The result equals a one-off hash of the same tree.

When the watch cannot be trusted, the tree is passed over again, reading only the files whose
`lstat` key (mode, device, inode, size, mtime, ctime) changed — ctime moves on every write and
cannot be set by a user, see hashed_tree.py — and watched anew:
- the first time, and after the engine restarts (nothing is kept on disk);
- the kernel's event queue overflowed, the root folder was replaced or moved, one folder
  showed up twice (a bind mount inside the tree);
- `verify=True`: the wrap-up's comparison with the approved tree does not rest on events alone
  (a write through a shared memory map raises none);
- a pass was cut short by its deadline.
Without inotify (another OS, the per-user instance or watch limit reached) or past the file
bound, every turn is such a pass: slower, never wrong.

Kept per workspace in memory, at most `MAX_KEPT_FILES` entries and `MAX_KEPT_TREES` trees (the
least recently hashed are dropped with their watches). Every tree shares one inotify instance
(the per-user limit on instances is often 128, on watches ~8k to ~500k by memory). One pass at
a time per workspace: a second caller waits for the first, up to its own deadline.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections import OrderedDict

from rooms.work.hashed_tree import (
    WORK,
    Budget,
    Folder,
    Late,
    Reader,
    digest,
    file_kept,
    folder_kind,
    racy_before,
    read_file,
    root_hex,
    scan,
    touch,
)
from rooms.work.inotify import (
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MOVE_SELF,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    Event,
    Inotify,
)

MAX_KEPT_FILES = 150_000  # ~100 MB (~700 bytes a file: entry, key, digest part)
MAX_KEPT_TREES = 256
_SELF_GONE = IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT


class _Hub:
    """One inotify instance for every kept tree (the per-user limit on instances is often 128):
    whoever drains it hands each tree its own events."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.notify: Inotify | None = None
        self.opened = False
        self.owners: dict[int, WatchedTree] = {}  # watch descriptor -> its tree
        self.overflows = 0  # each one makes every tree pass over its whole tree

    def available(self) -> bool:
        with self.lock:
            if not self.opened:
                self.opened = True
                self.notify = Inotify.open()
            return self.notify is not None

    def watch(self, tree: WatchedTree, folder: str) -> int:
        with self.lock:
            assert self.notify is not None
            wd = self.notify.watch(folder)
            owner = self.owners.get(wd)
            if owner is not None and owner is not tree:
                owner.stale = True  # one folder in two trees: the newer one keeps it
            self.owners[wd] = tree
            return wd

    def unwatch(self, tree: WatchedTree, wd: int) -> None:
        with self.lock:
            if self.owners.get(wd) is tree:
                del self.owners[wd]
                assert self.notify is not None
                self.notify.unwatch(wd)

    def drain(self) -> None:
        """Hand every queued event to the tree that owns its watch."""
        with self.lock:
            if self.notify is None:
                return
            for event in self.notify.events():
                if event.mask & IN_Q_OVERFLOW:
                    self.overflows += 1
                    continue
                owner = self.owners.get(event.wd)
                if owner is not None:
                    owner.pending.append(event)
                    if event.mask & IN_IGNORED:
                        del self.owners[event.wd]  # the kernel dropped it (folder gone)


_HUB = _Hub()


class WatchedTree:
    """One workspace's hashed tree, its watch, and what is needed to bring both up to date."""

    def __init__(self, root: str, *, use_inotify: bool = True) -> None:
        self.root = root
        self.use_inotify = use_inotify
        self.lock = threading.Lock()
        self.tree: Folder | None = None
        self.watched = False
        self.pending: list[Event] = []  # filled by _HUB.drain, under the hub's lock
        self.stale = True  # the next call passes over the whole tree
        self._by_wd: dict[int, Folder] = {}
        self._identity: tuple[int, int] | None = None
        self._overflows = 0
        self.passes = 0  # whole passes so far (tests and the benchmark read it)

    @property
    def watching(self) -> bool:
        return self.watched and not self.stale

    def hexdigest(self, reader: Reader, budget: Budget, *, verify: bool = False) -> str:
        """The tree's hash now. Raises Late (and passes over the whole tree next time)."""
        reader.check()  # a call already late says so even when nothing changed
        try:
            info = os.stat(self.root)
            identity = (info.st_dev, info.st_ino)
        except OSError:
            identity = None
        if identity != self._identity:
            self.stale = True
        try:
            if self.watched and not self.stale and not verify:
                limit = budget.files_left
                self._apply_events(reader, budget)
                if self.tree is not None and not self.stale:
                    digest(self.tree)
                    self.stale = self.tree.count > limit  # past the bound: a pass decides
            if not self.watched or self.stale or verify:
                self._identity = identity
                self._pass(reader, budget)
        except Late:
            self.stale = True
            raise
        assert self.tree is not None
        return root_hex(self.tree, budget.skipped)

    @property
    def files(self) -> int:
        return self.tree.count if self.tree is not None and self.tree.digest else 0

    def close(self) -> None:
        """Drop every watch of this tree (the tree itself stays, for the next pass)."""
        for wd in list(self._by_wd):
            _HUB.unwatch(self, wd)
        self._by_wd.clear()
        self.watched = False
        with _HUB.lock:
            self.pending.clear()

    # A whole pass ---------------------------------------------------------------------------

    def _pass(self, reader: Reader, budget: Budget) -> None:
        previous = self.tree
        self.close()
        self.watched = self.use_inotify and _HUB.available()
        self._overflows = _HUB.overflows
        self.stale = False
        root = Folder(self.root, WORK)
        self.tree = root  # before the scan: a pass cut short still leaves what it read
        self.passes += 1
        scan(
            root,
            reader,
            budget,
            previous=previous,
            watch=self._watch if self.watched else None,
            trusted_before=racy_before(),
        )
        if budget.skipped or self.stale:
            # Past the file bound, or a folder seen twice: events cannot stand for the tree.
            self.close()
            self.stale = False

    def _watch(self, folder: Folder) -> None:
        if not self.watched:
            return
        try:
            wd = _HUB.watch(self, folder.full)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return  # gone already: its parent's event says so
            self.close()  # ENOSPC (the watch limit) and the like: passes from now on
            self.use_inotify = False
            return
        known = self._by_wd.get(wd)
        if known is not None and known is not folder and known.attached:
            self.stale = True  # one folder twice (a bind mount): events are ambiguous
        self._by_wd[wd] = folder
        folder.wd = wd

    # Between passes: only what the kernel named ----------------------------------------------

    def _apply_events(self, reader: Reader, budget: Budget) -> None:
        _HUB.drain()
        with _HUB.lock:
            events, self.pending = self.pending, []
        if _HUB.overflows != self._overflows:
            self.stale = True  # events were lost: which tree's, nobody knows
            return
        changed: dict[tuple[int, str], tuple[Folder, str]] = {}
        for event in events:
            folder = self._by_wd.get(event.wd)
            if folder is None or not folder.attached:
                continue  # a watch dropped with its folder
            if event.mask & _SELF_GONE:
                if folder.parent is None:
                    self.stale = True  # the root itself
                    return
                changed[(id(folder.parent), folder.name)] = (folder.parent, folder.name)
            elif event.name:
                changed[(id(folder), event.name)] = (folder, event.name)
        trusted_before = racy_before()
        for folder, name in changed.values():
            reader.check()
            if folder.attached:
                self._look_again(folder, name, reader, budget, trusted_before)
            if self.stale or not self.watched:
                return  # the caller passes over the whole tree

    def _look_again(
        self, folder: Folder, name: str, reader: Reader, budget: Budget, trusted_before: int
    ) -> None:
        """Bring one name of `folder` up to date with the disk."""
        full = os.path.join(folder.full, name)
        old_folder = folder.folders.pop(name, None)
        if old_folder is not None:
            self._drop(old_folder)
        folder.files.pop(name, None)
        touch(folder, name)
        try:
            info = os.lstat(full)
        except OSError:
            return  # deleted or moved away
        if stat.S_ISDIR(info.st_mode):
            kind = folder_kind(folder.kind, name)
            if kind is not None:
                child = Folder(full, kind, folder, name)
                folder.folders[name] = child
                scan(child, reader, budget, watch=self._watch, trusted_before=trusted_before)
        elif file_kept(folder.kind, name):
            folder.files[name] = read_file(full, reader, budget, None, trusted_before)

    def _drop(self, folder: Folder) -> None:
        folder.attached = False
        if folder.wd is not None and self._by_wd.get(folder.wd) is folder:
            del self._by_wd[folder.wd]
            _HUB.unwatch(self, folder.wd)
        for child in folder.folders.values():
            self._drop(child)


_KEPT: OrderedDict[str, WatchedTree] = OrderedDict()
_KEPT_LOCK = threading.Lock()


def watched_tree(root: str) -> WatchedTree:
    """The kept tree of the folder at `root` (a real path), made the most recently used."""
    with _KEPT_LOCK:
        tree = _KEPT.pop(root, None) or WatchedTree(root)
        _KEPT[root] = tree
        total = sum(kept.files for kept in _KEPT.values())
        while (total > MAX_KEPT_FILES or len(_KEPT) > MAX_KEPT_TREES) and len(_KEPT) > 1:
            _, oldest = _KEPT.popitem(last=False)
            total -= oldest.files
            if oldest.lock.acquire(blocking=False):  # else its pass is stuck: leave it be
                oldest.close()
                oldest.lock.release()
        return tree


def forget_all() -> None:
    """Drop every kept tree (tests)."""
    with _KEPT_LOCK:
        for tree in _KEPT.values():
            with tree.lock:
                tree.close()
        _KEPT.clear()
