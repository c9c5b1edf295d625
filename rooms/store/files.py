"""The database's files are the bot's alone (issue 24 #15): every conversation is in them.

The database is created 0600 before SQLite opens it, and SQLite gives the `-wal`, `-shm` and
`-journal` files it makes the database file's permission bits, so all of them stay 0600 whatever
the umask. A database found with bits for its group or others (made by an older Tribunal or
copied in) has them removed when it is opened, each file, and the log says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat

log = logging.getLogger(__name__)

DB_MODE = 0o600
COMPANIONS = ("", "-wal", "-shm", "-journal")  # SQLite's files beside the database


def make_private(path: str) -> list[str]:
    """Create the database file `path` 0600 when it does not exist, and tighten it and its
    companions to 0600 when looser. Returns the files tightened (logged); nothing for an
    in-memory database or a URI, whose files are SQLite's business."""
    if path == ":memory:" or path.startswith("file:") or not path:
        return []
    # An empty file is a new database to SQLite; O_EXCL: one that exists is never replaced. A
    # file that cannot be made here is SQLite's to report, in its words, when it opens it.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, DB_MODE))
    tightened: list[str] = []
    for suffix in COMPANIONS:
        name = path + suffix
        try:
            mode = stat.S_IMODE(os.stat(name).st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o077:
            try:
                os.chmod(name, mode & ~0o077)
            except OSError as exc:
                log.warning(
                    "%s is open to other users (mode %03o) and stays so: %s", name, mode, exc
                )
                continue
            log.warning(
                "%s was open to other users (mode %03o): made it %03o", name, mode, mode & ~0o077
            )
            tightened.append(name)
    return tightened
