"""Linux inotify, through ctypes: which names in a watched folder changed since the last look.

Used by the workspace fingerprint (rooms/work/watched_tree.py) so a turn re-reads only what was
touched instead of stat'ing every file. The kernel queues an event while the write, create,
rename, chmod or delete is still in its system call, so whatever finished before `events()` is
called is in what it returns. No package is needed: three libc calls and `os.read`.

`Inotify.open()` returns None where inotify cannot be had (not Linux, no such libc symbol, or
the per-user instance limit reached): the caller then stats the tree instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_DONT_FOLLOW = 0x2000000
IN_ISDIR = 0x40000000

# Everything that can change what a folder holds or what a file in it is.
WATCHED = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)
_READ_BYTES = 256 * 1024


@dataclass(frozen=True)
class Event:
    wd: int  # -1 with IN_Q_OVERFLOW
    mask: int
    name: str  # "" for an event on the watched folder itself


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - the attribute lookup is the check
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


class Inotify:
    """One inotify instance: watches folders, hands back their events, never blocks."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls) -> Inotify | None:
        if _LIBC is None:
            return None
        fd = _LIBC.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        return None if fd < 0 else cls(fd)

    def watch(self, folder: str) -> int:
        """The watch descriptor of `folder` (the same one again for a folder already watched).
        Raises OSError: ENOSPC past the per-user watch limit, ENOTDIR for what is no folder."""
        assert _LIBC is not None
        wd = _LIBC.inotify_add_watch(
            self.fd, os.fsencode(folder), WATCHED | IN_ONLYDIR | IN_DONT_FOLLOW
        )
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), folder)
        return int(wd)

    def unwatch(self, wd: int) -> None:
        assert _LIBC is not None
        _LIBC.inotify_rm_watch(self.fd, wd)  # a watch the kernel already dropped: EINVAL, fine

    def events(self) -> Iterator[Event]:
        """Every event queued now, in order; returns when the queue is empty."""
        while True:
            try:
                data = os.read(self.fd, _READ_BYTES)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                raw = data[offset : offset + size].rstrip(b"\0")
                offset += size
                yield Event(wd, mask, os.fsdecode(raw))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
