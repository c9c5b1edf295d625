"""Git as the engine runs it: nothing an agent wrote can run on the host (DESIGN §6).

A task's worktree is written by its owner, so everything git would read from there is hostile:
a `.git` folder or file planted in it (config with `core.fsmonitor`, `core.hooksPath`, filters,
aliases, `include.path`, hooks), and the engine must not run any of it. So every engine git call

- names its git dir and work tree explicitly (`--git-dir`, `--work-tree`): git never looks for a
  `.git` in the worktree, which the owner may have replaced with one of its own;
- reads no system or global configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`,
  no system attributes), and starts from an environment of its own, so no `GIT_*` variable of
  the host's reaches it;
- runs no hook and no fsmonitor (`core.hooksPath=/dev/null`, `core.fsmonitor=false`), no pager,
  no editor, no external diff or textconv, no GPG signing, no automatic gc.

What remains is the configuration of the group's own repository, which its operator wrote,
minus its filter drivers: the owner writes `.gitattributes` and could point any of them at any
file, so calls that read the work tree (`git add`, `git diff`) get every filter driver defined
switched off (`no_filters`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence

GIT_TIMEOUT_S = 120.0
IDENTITY = {"name": "Tribunal", "email": "tribunal@localhost"}

# Settings that make git run a program, switched off on every call.
SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.pager=cat",
    "core.editor=false",
    "core.attributesFile=/dev/null",
    "core.sshCommand=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "diff.external=",
    "color.ui=false",
    "advice.detachedHead=false",
    "protocol.allow=never",
)


class GitError(RuntimeError):
    """A git call that failed, with its stderr."""


def safe_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an engine git call: PATH and locale from the host, nothing else."""
    source = os.environ if base is None else base
    env = {k: source[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in source}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "HOME": "/nonexistent",
            "GIT_AUTHOR_NAME": IDENTITY["name"],
            "GIT_AUTHOR_EMAIL": IDENTITY["email"],
            "GIT_COMMITTER_NAME": IDENTITY["name"],
            "GIT_COMMITTER_EMAIL": IDENTITY["email"],
        }
    )
    return env


def argv(
    args: Sequence[str],
    *,
    git_dir: str | None,
    work_tree: str | None,
    extra_config: Sequence[str] = (),
) -> list[str]:
    command = ["git"]
    for setting in (*SAFE_CONFIG, *extra_config):
        command += ["-c", setting]
    # Folders owned by another user (a container's uid) are the engine's own: say so, once
    # per call, instead of trusting every folder through a global setting.
    for folder in (git_dir, work_tree):
        if folder is not None:
            command += ["-c", f"safe.directory={folder}"]
    if git_dir is not None:
        command.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        command.append(f"--work-tree={work_tree}")
    return [*command, *args]


async def git(
    *args: str,
    cwd: str,
    git_dir: str | None = None,
    work_tree: str | None = None,
    extra_config: Sequence[str] = (),
    timeout_s: float = GIT_TIMEOUT_S,
    index_file: str | None = None,
) -> str:
    """Run one git command; its stdout, or GitError with its stderr. `index_file`: an index of
    the engine's own instead of the worktree's (`GIT_INDEX_FILE`, rooms/work/snapshots.py)."""
    env = safe_env()
    if index_file is not None:
        env["GIT_INDEX_FILE"] = index_file
    proc = await asyncio.create_subprocess_exec(
        *argv(args, git_dir=git_dir, work_tree=work_tree, extra_config=extra_config),
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except (TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        what = " ".join(args[:2])
        raise GitError(f"git {what} failed: {err.decode('utf-8', 'replace').strip()[:500]}")
    return out.decode("utf-8", "replace")


async def no_filters(*, cwd: str, git_dir: str) -> list[str]:
    """Settings that switch off every filter driver the repository's configuration defines
    (an empty command is no filter; `required` off so that no file is refused)."""
    try:
        out = await git(
            "config", "--name-only", "--get-regexp", r"^filter\.", cwd=cwd, git_dir=git_dir
        )
    except GitError:
        return []  # no filter defined: `git config` exits 1
    names = {key.rsplit(".", 1)[0] for key in out.split()}
    return [
        f"{name}.{part}=" for name in sorted(names) for part in ("clean", "smudge", "process")
    ] + [f"{name}.required=false" for name in sorted(names)]
