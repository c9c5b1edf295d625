"""A content hash of the workspace folder, taken after every turn (DESIGN §4).

The detectors compare these hashes to tell a pair that changes the work from one that does not
(stagnation) or one that undoes its own changes (oscillation). The hash covers relative paths,
file contents, the executable bit and symlink targets, walked in sorted order so the same tree
always hashes the same. Left out: the churn inside a `.git` folder (objects, refs, index, logs:
commits are not changes to the work) and tool caches that running the tests rewrites
(`__pycache__`, `.pytest_cache`, …), which would otherwise make a pair that only re-runs the
tests look busy. Kept from every `.git` folder: what a later git call in that folder would run
or obey (`config`, `config.worktree`, `hooks/`, `info/`), so a wrap-up that plants a hook or
edits the git configuration changes the hash and goes back to review; a `.git` file (a
worktree's pointer to its git dir) is hashed like any file.

Kept between turns (rooms/work/watched_tree.py): the folders are watched with inotify and a
turn reads again only the files the kernel says were touched, so a turn with few changes costs
milliseconds however big the tree is; where that watch cannot be had or trusted, a pass stats
every file and reads only those whose status (ctime included: a write sets it, no user can)
changed. The value is a Merkle digest by folder (rooms/work/hashed_tree.py), the same however it
was reached; `tree_hash_sync` computes it once, keeping nothing.

Bounded so a workspace with large build outputs cannot stall the engine: a file over
`MAX_FILE_BYTES`, or any file once `MAX_TOTAL_BYTES` have been read in one call, counts by its
status (size, mtime, ctime, inode) instead of its content; after `MAX_FILES` files the rest count
only by their number (and the tree is not watched: every turn is a whole pass). Runs in a worker
thread: reading a big tree must not block the event loop.

An agent can change the tree while it is hashed, so nothing it plants can make the hash hang:
a file is read from one descriptor opened with `O_NONBLOCK | O_NOFOLLOW` and read only when
`fstat` on that descriptor says it is a regular file (a file swapped for a named pipe, a device
or a symlink after the walk looked at it is hashed as "not a file", never read), at most the
size `fstat` gave. The whole hash has a deadline (`HASH_TIMEOUT_S`): past it the walk stops,
and the engine stops waiting for a read stuck in the kernel `BACKSTOP_S` later; either way the
result is a random hash that equals no other, so a wrap-up compared with it counts as changed
(when in doubt, not approved) and the detectors see a change, not a deadlock.

What is committed is not decided here: the engine commits the git tree the reviewer approved
(rooms/work/snapshots.py), which this hash only adds to (a wrap-up that changes either goes back to
review).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import time

from rooms.work.hashed_tree import (
    GIT_KEPT,
    SKIPPED_DIRS,
    SKIPPED_SUFFIXES,
    Budget,
    Late,
    Reader,
    build,
)
from rooms.work.watched_tree import watched_tree

__all__ = ["GIT_KEPT", "SKIPPED_DIRS", "SKIPPED_SUFFIXES", "tree_hash", "tree_hash_sync"]

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_FILES = 100_000
HASH_TIMEOUT_S = 60.0  # the whole hash
BACKSTOP_S = 5.0  # then the engine stops waiting for a read that does not return
_CHUNK = 1024 * 1024
# Opening never blocks (a named pipe without a writer) and never follows a final symlink.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_Budget = Budget  # the name tests and older callers use


async def tree_hash(
    path: str | None, timeout_s: float = HASH_TIMEOUT_S, *, verify: bool = False
) -> str | None:
    """Hex SHA-256 of the folder's contents; None for None or a path that is not a folder.
    Kept between calls (rooms/work/watched_tree.py): a call reads only what changed since the
    last one; `verify` passes over the whole tree (stat'ing every file, reading the changed).
    Past `timeout_s`, a random hash that equals no other (see the module's docstring)."""
    if path is None:
        return None
    deadline = time.monotonic() + timeout_s
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(fingerprint_sync, path, deadline, verify=verify),
            timeout_s + BACKSTOP_S,
        )
    except TimeoutError:
        # The thread stays blocked in its read until the kernel returns; nothing waits for it.
        return _never_equal(hashlib.sha256(b"timeout"))


def fingerprint_sync(
    path: str, deadline: float | None = None, *, verify: bool = False
) -> str | None:
    """`tree_hash` off the event loop: the kept tree of `path`, brought up to date."""
    if not os.path.isdir(path):
        return None
    kept = watched_tree(os.path.realpath(path))
    wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
    if not kept.lock.acquire(timeout=wait):  # another pass, stuck past our deadline
        return _never_equal(hashlib.sha256(b"busy"))
    try:
        return kept.hexdigest(_reader(deadline), _budget(), verify=verify)
    except Late:
        return _never_equal(hashlib.sha256(b"late"))
    finally:
        kept.lock.release()


def tree_hash_sync(path: str, deadline: float | None = None) -> str | None:
    """A one-off hash that keeps nothing (the same value `tree_hash` gives for the same tree),
    for callers already off the event loop and for tests; `deadline`: a `time.monotonic()`
    value past which the walk stops."""
    if not os.path.isdir(path):
        return None
    try:
        return build(path, _reader(deadline), _budget())
    except Late:
        return _never_equal(hashlib.sha256(b"late"))


def _reader(deadline: float | None) -> Reader:
    # Looked up at each call: tests replace `_entry`'s helpers and `_past`.
    return Reader(entry=_entry, past=_past, deadline=deadline)


def _budget() -> Budget:
    return Budget(bytes_left=MAX_TOTAL_BYTES, files_left=MAX_FILES)


def _past(deadline: float) -> bool:
    return time.monotonic() >= deadline


def _never_equal(h: hashlib._Hash) -> str:
    """What a hash cut short by its deadline is: random, so it equals no other."""
    h.update(b"\0T" + os.urandom(16))
    return h.hexdigest()


def _entry(full: str, budget: Budget) -> bytes:
    """What one file contributes: its link target, or its mode bit and content digest."""
    try:
        info = os.lstat(full)
        if stat.S_ISLNK(info.st_mode):
            return b"L" + os.fsencode(os.readlink(full))
        if not stat.S_ISREG(info.st_mode):
            return b"O"  # sockets, fifos, devices: present, no content to read
        return _file_entry(full, budget)
    except OSError as exc:  # unreadable or vanished mid-walk: hash that fact, do not fail
        return b"E" + str(exc.errno).encode()


def _file_entry(full: str, budget: Budget) -> bytes:
    """A regular file's mode bit and content digest, from one descriptor: the path may have
    been swapped since the `lstat` (for a pipe, a device, a symlink), so what is read is what
    `fstat` on the open descriptor says is a regular file. Raises OSError (a symlink now:
    ELOOP)."""
    fd = os.open(full, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"O"
        executable = b"x" if info.st_mode & stat.S_IXUSR else b"-"
        if info.st_size > MAX_FILE_BYTES or info.st_size > budget.bytes_left:
            # Not read: its status stands for it, ctime and inode included, so a rewrite to
            # the same size and mtime is still seen (a write sets ctime; no user can).
            status = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
            return b"B" + executable + b"%d:%d:%d:%d" % status
        budget.bytes_left -= info.st_size
        return b"F" + executable + _content_digest(fd, info.st_size)
    finally:
        os.close(fd)


def _content_digest(fd: int, size: int) -> bytes:
    """The first `size` bytes (what `fstat` said): a file that grows while it is read cannot
    make the hash read past the budget it was given."""
    h = hashlib.sha256()
    left = size
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            break
        h.update(chunk)
        left -= len(chunk)
    return h.digest()
