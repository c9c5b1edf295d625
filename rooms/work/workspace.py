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

Bounded so a workspace with large build outputs cannot stall the engine: a file over
`MAX_FILE_BYTES`, or any file once `MAX_TOTAL_BYTES` have been read, counts by its size and
modification time instead of its content; after `MAX_FILES` files the rest count only by their
number. Runs in a worker thread: reading a big tree must not block the event loop.

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
from dataclasses import dataclass

SKIPPED_DIRS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)
# What is hashed inside a `.git` folder: what git runs or obeys there.
GIT_KEPT = frozenset({"config", "config.worktree", "hooks", "info"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_FILES = 100_000
HASH_TIMEOUT_S = 60.0  # the whole hash
BACKSTOP_S = 5.0  # then the engine stops waiting for a read that does not return
_CHUNK = 1024 * 1024
# Opening never blocks (a named pipe without a writer) and never follows a final symlink.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


async def tree_hash(path: str | None, timeout_s: float = HASH_TIMEOUT_S) -> str | None:
    """Hex SHA-256 of the folder's contents; None for None or a path that is not a folder.
    Past `timeout_s`, a random hash that equals no other (see the module's docstring)."""
    if path is None:
        return None
    deadline = time.monotonic() + timeout_s
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(tree_hash_sync, path, deadline), timeout_s + BACKSTOP_S
        )
    except TimeoutError:
        # The thread stays blocked in its read until the kernel returns; nothing waits for it.
        return _never_equal(hashlib.sha256(b"timeout"))


@dataclass
class _Budget:
    bytes_left: int
    files_left: int
    skipped: int = 0


def tree_hash_sync(path: str, deadline: float | None = None) -> str | None:
    """`tree_hash` for callers already off the event loop (and for tests); `deadline`: a
    `time.monotonic()` value past which the walk stops."""
    if not os.path.isdir(path):
        return None
    h = hashlib.sha256()
    budget = _Budget(bytes_left=MAX_TOTAL_BYTES, files_left=MAX_FILES)
    try:
        files = _files(path, deadline)
    except _Late:
        return _never_equal(h)
    for rel, full in files:
        if deadline is not None and _past(deadline):
            return _never_equal(h)
        if budget.files_left <= 0:
            budget.skipped += 1
            continue
        budget.files_left -= 1
        h.update(b"\0P" + rel.encode("utf-8", "surrogateescape") + b"\0")
        h.update(_entry(full, budget))
    h.update(b"\0S%d" % budget.skipped)
    return h.hexdigest()


class _Late(Exception):
    """The walk passed its deadline."""


def _files(root: str, deadline: float | None = None) -> list[tuple[str, str]]:
    """(relative POSIX path, full path) of every file and symlink, sorted by relative path.
    Raises _Late past `deadline`."""
    found: list[tuple[str, str]] = []
    for folder, dirs, names in os.walk(root, onerror=None, followlinks=False):
        if deadline is not None and _past(deadline):
            raise _Late
        # Symlinked folders are not descended into (os.walk lists them in dirs): hash the link.
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        if ".git" in dirs and ".git" not in links:
            found.extend(_git_kept(root, os.path.join(folder, ".git")))
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and d not in links]
        for name in [*names, *links]:
            if name.endswith(SKIPPED_SUFFIXES):
                continue
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            found.append((rel, full))
    found.sort()
    return found


def _git_kept(root: str, git_dir: str) -> list[tuple[str, str]]:
    kept: list[tuple[str, str]] = []
    try:
        names = os.listdir(git_dir)
    except OSError:
        return kept
    for name in names:
        if name not in GIT_KEPT:
            continue
        full = os.path.join(git_dir, name)
        if os.path.isdir(full) and not os.path.islink(full):
            for folder, _dirs, files in os.walk(full, followlinks=False):
                for file in [
                    *files,
                    *(d for d in _dirs if os.path.islink(os.path.join(folder, d))),
                ]:
                    path = os.path.join(folder, file)
                    kept.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
        else:
            kept.append((os.path.relpath(full, root).replace(os.sep, "/"), full))
    return kept


def _past(deadline: float) -> bool:
    return time.monotonic() >= deadline


def _never_equal(h: hashlib._Hash) -> str:
    """What a hash cut short by its deadline is: random, so it equals no other."""
    h.update(b"\0T" + os.urandom(16))
    return h.hexdigest()


def _entry(full: str, budget: _Budget) -> bytes:
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


def _file_entry(full: str, budget: _Budget) -> bytes:
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
            return b"B" + executable + b"%d:%d" % (info.st_size, info.st_mtime_ns)
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
