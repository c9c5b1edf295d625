"""The data folder is the bot's alone (issue 24 #15): the database, the decision records and the
task worktrees are in it, and other local users must not read them.

Created 0700; one found with bits for its group or others has them removed at start, and the
log says so. The folder of a database kept elsewhere (`db = …`) is made 0700 when the bot makes
it; one that exists is the user's choice and is left as it is (the database files themselves
are 0600 either way: rooms/store/files.py).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

FOLDER_MODE = 0o700


def make_private_folder(folder: Path, *, tighten: bool = True) -> None:
    """Make `folder` (and missing parents) with mode 0700; when `tighten`, remove the group's
    and others' bits of one that exists, logging it."""
    existed = folder.is_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    if existed and not tighten:
        return
    mode = stat.S_IMODE(folder.stat().st_mode)
    if not mode & 0o077:
        return
    try:
        os.chmod(folder, mode & ~0o077)
    except OSError as exc:
        log.warning("the folder %s is open to other users (mode %03o): %s", folder, mode, exc)
        return
    if existed:
        log.warning(
            "the folder %s was open to other users (mode %03o): made it %03o",
            folder,
            mode,
            mode & ~0o077,
        )
