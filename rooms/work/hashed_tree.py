"""The workspace as a tree of hashed entries: one digest per folder (a Merkle tree).

A folder's digest covers its files' entries and its sub-folders' digests, by name in sorted
order, so a change to one file costs a new digest for its folder and the folders above it, not a
pass over the whole tree (rooms/work/watched_tree.py keeps such a tree between turns). The same
tree always gives the same digest, however it was built. Empty folders add nothing, as before.

What a file contributes (its "entry": content digest, link target, ...) is decided by the caller's
`Reader.entry` (rooms/work/workspace.py, which reads from one descriptor and never blocks); what
is left out (`.git` churn, tool caches) is decided here, by `file_kept` and `folder_kind`.

A file's entry is kept with its `lstat` key (mode, device, inode, size, mtime, ctime) so a later
pass over the tree reads again only the files whose key changed. The key notices every write:
a write sets the file's ctime to the current time, and no call lets a user set ctime (utime sets
mtime and atime; ctime becomes "now" again). Timestamps are coarse (a clock tick), so a file
written again within the tick it was read in keeps its key: like git's "racily clean" index
entries, a key whose ctime is not older than `RACY_NS` before the pass started is not trusted,
and that file is read again on the next pass.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SKIPPED_DIRS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)
# What is hashed inside a `.git` folder: what git runs or obeys there.
GIT_KEPT = frozenset({"config", "config.worktree", "hooks", "info"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")
RACY_NS = 2_000_000_000  # far above any file system's timestamp tick

WORK = "work"  # the work itself: everything but tool caches and .git churn
GIT = "git"  # a `.git` folder: only GIT_KEPT
KEPT = "kept"  # inside hooks/ or info/ of a `.git` folder: everything

Key = tuple[int, int, int, int, int, int]
_NONE = (b"", 0)


@dataclass
class Budget:
    bytes_left: int
    files_left: int
    skipped: int = 0


class Late(Exception):
    """The hash passed its deadline."""


@dataclass(frozen=True)
class Reader:
    entry: Callable[[str, Budget], bytes]  # what one file contributes
    past: Callable[[float], bool]  # is this monotonic deadline past?
    deadline: float | None = None

    def check(self) -> None:
        if self.deadline is not None and self.past(self.deadline):
            raise Late


@dataclass(slots=True)
class File:
    entry: bytes
    key: Key | None  # None: read it again on the next pass over the tree


@dataclass(eq=False, slots=True)
class Folder:
    full: str
    kind: str
    parent: Folder | None = None
    name: str = ""
    files: dict[str, File] = field(default_factory=dict)
    folders: dict[str, Folder] = field(default_factory=dict)
    wd: int | None = None  # its inotify watch, when watched
    attached: bool = True  # False once dropped from the tree
    digest: bytes | None = None  # None: to be computed again
    count: int = 0  # files below it, valid with `digest`
    # name -> (its encoded part of the digest, the files it holds); dropped by `touch`.
    parts: dict[str, tuple[bytes, int]] = field(default_factory=dict)


def folder_kind(parent_kind: str, name: str) -> str | None:
    """The kind of a sub-folder called `name`, or None when it is left out."""
    if parent_kind == WORK:
        if name == ".git":
            return GIT
        return None if name in SKIPPED_DIRS else WORK
    if parent_kind == GIT:
        return KEPT if name in GIT_KEPT else None
    return KEPT


def file_kept(parent_kind: str, name: str) -> bool:
    if parent_kind == WORK:
        return not name.endswith(SKIPPED_SUFFIXES)
    if parent_kind == GIT:
        return name in GIT_KEPT
    return True


def stat_key(info: os.stat_result) -> Key:
    return (
        info.st_mode,
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )


def racy_before() -> int:
    """Keys with a ctime from this moment on are not trusted (see the module's docstring)."""
    return time.time_ns() - RACY_NS


def read_file(
    full: str, reader: Reader, budget: Budget, old: File | None, trusted_before: int | None
) -> File:
    """A file's entry: `old`'s when its key is unchanged, else read now. `trusted_before`
    None: no key is taken (a one-off hash keeps nothing)."""
    key: Key | None = None
    if trusted_before is not None:
        try:
            key = stat_key(os.lstat(full))  # before the read: a later write changes the key
        except OSError:
            key = None
        if old is not None and old.key is not None and old.key == key:
            return old
    entry = reader.entry(full, budget)
    if key is not None and trusted_before is not None and key[5] >= trusted_before:
        key = None
    return File(entry, key)


def scan(
    folder: Folder,
    reader: Reader,
    budget: Budget,
    *,
    previous: Folder | None = None,
    watch: Callable[[Folder], None] | None = None,
    trusted_before: int | None = None,
) -> None:
    """Fill `folder` from the disk, in sorted order; files whose key matches their entry in
    `previous` are not read again. `watch` is called on each folder before it is listed, so
    nothing created after the listing goes unseen."""
    if watch is not None:
        watch(folder)
    try:
        with os.scandir(folder.full) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:  # vanished or unreadable: holds nothing, as os.walk saw it
        return
    for item in entries:
        reader.check()
        name = item.name
        try:
            is_folder = item.is_dir(follow_symlinks=False)
        except OSError:
            is_folder = False
        if is_folder:
            kind = folder_kind(folder.kind, name)
            if kind is None:
                continue
            child = Folder(item.path, kind, folder, name)
            folder.folders[name] = child
            before = previous.folders.get(name) if previous is not None else None
            scan(
                child,
                reader,
                budget,
                previous=before,
                watch=watch,
                trusted_before=trusted_before,
            )
        elif file_kept(folder.kind, name):
            if budget.files_left <= 0:
                budget.skipped += 1
                continue
            budget.files_left -= 1
            old = previous.files.get(name) if previous is not None else None
            folder.files[name] = read_file(item.path, reader, budget, old, trusted_before)


def touch(folder: Folder, name: str) -> None:
    """`name` in `folder` changed: its part and the digests above it are computed again."""
    node: Folder | None = folder
    while node is not None:
        node.parts.pop(name, None)
        node.digest = None
        name, node = node.name, node.parent


def digest(folder: Folder) -> bytes:
    """The folder's digest; sets `count`. Only the parts `touch` dropped are encoded again, so a
    change deep in a wide tree costs a join of each folder's parts up the path, not a walk."""
    if folder.digest is not None:
        return folder.digest
    parts = folder.parts
    for name, file in folder.files.items():
        if name not in parts:
            entry = file.entry
            parts[name] = (b"f" + _name(name) + b"%d:" % len(entry) + entry, 1)
    for name, child in folder.folders.items():
        if name not in parts:
            child_digest = digest(child)  # an empty folder adds nothing
            parts[name] = (b"d" + _name(name) + child_digest, child.count) if child.count else _NONE
    ordered = sorted(parts.items())
    h = hashlib.sha256(b"D")
    h.update(b"".join(part for _, (part, _count) in ordered))
    folder.count = sum(count for _, (_part, count) in ordered)
    folder.digest = h.digest()
    return folder.digest


def root_hex(root: Folder, skipped: int) -> str:
    """The workspace's hash: the root folder's digest and how many files were past the bound."""
    return hashlib.sha256(b"tree\0" + digest(root) + b"\0S%d" % skipped).hexdigest()


def build(path: str, reader: Reader, budget: Budget) -> str:
    """A one-off hash of the folder at `path`, keeping nothing. Raises Late."""
    root = Folder(path, WORK)
    scan(root, reader, budget)
    return root_hex(root, budget.skipped)


def _name(name: str) -> bytes:
    return os.fsencode(name) + b"\0"  # no name holds a NUL: the boundary is unambiguous
