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

The hand-over is root changing owners in a tree that a process of the container user may be
writing at that moment (a container of the same task, or one left running). A walk by path would
let that process swap a folder for a symlink between the listing and the chown, and root's chown
would follow it onto the host's files (issue 24 #4). So the walk goes by file descriptor: each
folder is opened relative to its parent's descriptor with O_NOFOLLOW | O_DIRECTORY (a symlink
put in its place fails to open and is skipped) and changed with fchown on that descriptor; every
other entry is changed by name relative to the held folder descriptor, never following a
symlink (`fchownat(..., AT_SYMLINK_NOFOLLOW)`), so no path is ever resolved through a link. A
folder on another filesystem (a mount) is not entered, and a file with more than one hard link
keeps its owner (its other name may be outside the tree; a container cannot link anything from
outside its bind mount, so that is a second fence, not the first).
"""

from __future__ import annotations

import contextlib
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
    try:
        top = os.open(path, _DIR_FLAGS)
    except OSError as exc:
        return f"the task's worktree {path} cannot be handed over: {exc}"
    try:
        _chown_tree(top, os.fstat(top).st_dev, *ids)
    finally:
        os.close(top)
    return workspace_problem(path, user)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _chown_tree(top: int, device: int, uid: int, gid: int) -> None:
    """fchown the open folder `top` and everything below it on filesystem `device`, by file
    descriptor (see the module's docstring). Depth first, holding one descriptor per level; an
    entry that vanishes or changes kind meanwhile is skipped (the process racing us made it, and
    gets nothing of root's), and so is a level too deep for the descriptors left."""
    os.fchown(top, uid, gid)
    frames = [(os.dup(top), _names(top))]
    try:
        while frames:
            folder, names = frames[-1]
            if not names:
                os.close(folder)
                frames.pop()
                continue
            child = _chown_entry(folder, names.pop(), device, uid, gid)
            if child is None:
                continue
            try:
                frames.append((child, _names(child)))
            except OSError:
                os.close(child)
    finally:
        for folder, _ in frames:
            os.close(folder)


def _names(folder: int) -> list[str]:
    with os.scandir(folder) as listing:
        return [entry.name for entry in listing]


def _chown_entry(folder: int, name: str, device: int, uid: int, gid: int) -> int | None:
    """Give the entry `name` of the open folder `folder` away; a sub-folder comes back opened
    (and already given away) to be walked, anything else as None."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        # By name in the held folder, the link itself: nothing is resolved through a symlink.
        if info.st_nlink == 1:
            with contextlib.suppress(OSError):
                os.chown(name, uid, gid, dir_fd=folder, follow_symlinks=False)
        return None
    if info.st_dev != device:
        return None  # a mount inside the worktree: not ours to give
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=folder)  # swapped for a symlink: ELOOP
    except OSError:
        return None
    if os.fstat(child).st_dev != device:
        os.close(child)
        return None
    os.fchown(child, uid, gid)
    return child
