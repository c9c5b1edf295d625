"""The one writer of the files the engine leaves for people: decision records (rooms/pair/
arbitration.py, rooms/phased/protocol.py, their Outcome rewritten by rooms/core/decisions.py) and
what a protocol saves in the workspace as its conclusion (the arena's synthesis).

Atomic: the text goes to a temporary file in the same folder, is flushed to disk (fsync), and only
then takes the file's name (`os.replace`; `os.link` when an existing file must not be replaced), so
a reader, or the next start after a crash, sees the old file or the new one, never a half-written
one; a failed write removes its temporary file. Off the event loop: `save` runs it in a worker
thread, because a slow or full disk must not stall every room the engine serves.
"""

from __future__ import annotations

import asyncio
import errno
import os
import secrets


async def save(path: str, text: str, *, exclusive: bool = False) -> None:
    """`write` in a worker thread. Raises OSError (FileExistsError when `exclusive` and the file
    is there)."""
    await asyncio.to_thread(write, path, text, exclusive=exclusive)


def write(path: str, text: str, *, exclusive: bool = False) -> None:
    """Write `text` (UTF-8) at `path`, creating its folder; all of it or nothing. `exclusive`:
    never over an existing file (FileExistsError)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    if exclusive and os.path.lexists(path):
        raise FileExistsError(
            errno.EEXIST, os.strerror(errno.EEXIST), path
        )  # before writing anything
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    # Created like `open(path, "w")` would create the file (0666 less the umask), and never over
    # another file of that name.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            _link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):  # after a failure, or the link's first name
            os.unlink(tmp)
    _sync_folder(folder)


def _link(tmp: str, path: str) -> None:
    """Give the finished file its name unless the name is taken (FileExistsError), unlike
    os.replace, which would replace another arena's file written meanwhile."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        # A filesystem without hard links (some mounted workspaces): claim the name first,
        # then move the finished file onto the claim; readers may see it empty for a moment.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
        try:
            os.replace(tmp, path)
        except OSError:
            os.unlink(path)  # our empty claim, not a file of anyone else
            raise


def _sync_folder(folder: str) -> None:
    """Make the new name itself durable (the rename lives in the folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a folder; the file's own data is on disk
    finally:
        os.close(fd)
