"""Whether the container user can write a workspace the owner's container mounts read-write.

The runner containers run as a fixed uid:gid (DockerConfig.user, 1000:1000). A workspace that
user cannot write makes every edit of the owner fail with "Permission denied" while the turn
itself goes on, so the Docker backend refuses the owner's turn at once with this reason, and
`tribunal doctor` says the same. Checked on the host with the folder's owner, group and mode
(what the kernel checks through a bind mount without user namespaces); a path this host does
not have (a remote engine) is not judged.

A task's worktree is another matter: the engine made it (rooms/work/worktrees.py), as its own user,
for that task alone, so nobody could have chowned it beforehand. When the engine runs as root
(the root deployments), `hand_over` gives the worktree to the container user (every file and
folder in it, symlinks themselves and never what they point to) before the owner's first turn;
any other engine user than the container's cannot, and the reason says to run the bot as the
containers' uid or as root.
"""

from __future__ import annotations

import os
import stat


def parse_user(user: str) -> tuple[int, int] | None:
    """(uid, gid) of a numeric `uid[:gid]`; None for a user name (not judged)."""
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        return None
    return int(uid), int(gid or uid)


def workspace_problem(path: str, user: str) -> str | None:
    """Why the container user `user` cannot write the folder `path`, or None."""
    ids = parse_user(user)
    try:
        info = os.stat(path)
    except OSError:
        return None
    if ids is None or not stat.S_ISDIR(info.st_mode):
        return None
    uid, gid = ids
    if uid == 0:
        return None
    mode = info.st_mode
    if info.st_uid == uid:
        allowed = mode & stat.S_IWUSR and mode & stat.S_IXUSR
    elif info.st_gid == gid:
        allowed = mode & stat.S_IWGRP and mode & stat.S_IXGRP
    else:
        allowed = mode & stat.S_IWOTH and mode & stat.S_IXOTH
    if allowed:
        return None
    return (
        f"the workspace {path} is not writable by the containers' user {uid}:{gid} (it belongs "
        f"to uid {info.st_uid}, gid {info.st_gid}, mode {stat.filemode(mode)}): run "
        f"`chown -R {uid}:{gid} {path}`"
    )


def hand_over(path: str, user: str) -> str | None:
    """Give the engine-made worktree folder `path` to the container user `user` when it cannot
    write it and the engine runs as root; why it still cannot, or None."""
    problem = workspace_problem(path, user)
    ids = parse_user(user)
    if problem is None or ids is None:
        return problem
    if os.geteuid() != 0:
        return (
            f"the task's worktree {path} was made by this bot's user (uid {os.geteuid()}), which "
            f"the containers' user {ids[0]}:{ids[1]} cannot write: run the bot as uid {ids[0]}, "
            f"or as root (which hands each task's worktree to {ids[0]}:{ids[1]})"
        )
    uid, gid = ids
    for folder, dirs, files in os.walk(path):  # followlinks=False: links are not entered
        for name in (*dirs, *files):
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)
    os.chown(path, uid, gid, follow_symlinks=False)
    return workspace_problem(path, user)
