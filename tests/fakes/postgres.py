"""A real PostgreSQL for the tests: Debian's `postgresql` package, a cluster made with `initdb` in
a temporary folder and served on a unix socket in that folder only (no TCP port), started by the
tests and stopped at the end (that server only).

PostgreSQL refuses to run as root, and the tests run as root in CI: then the server runs as the
`postgres` user the package creates (`setpriv`, which execs, so the process we started is the
server itself and stopping it stops nothing else). Durability is off (fsync, synchronous
commit): the tests' data lives for one run; locking and isolation are PostgreSQL's own.

`server()` yields a `Server` (None when PostgreSQL is not installed: the caller skips, or fails
under TRIBUNAL_REQUIRE_ENGINE=1); `Server.fresh_url()` is a URL to a new, empty schema of the
one database, so each test starts from nothing at the cost of a CREATE SCHEMA.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import psycopg

PORT = 5432  # only names the socket file (.s.PGSQL.5432) in our own folder


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian keeps them per major version)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


@dataclass
class Server:
    folder: Path
    process: subprocess.Popen[bytes]
    user: str
    _schemas: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        return f"postgresql:///tribunal?host={quote(str(self.folder))}&user={self.user}"

    def fresh_url(self, name: str | None = None) -> str:
        """A URL whose tables live in a new empty schema (its own search_path)."""
        schema = name or f"t{os.getpid()}_{next(self._schemas)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        return f"{self.url}&options={quote(f'-csearch_path={schema}')}"


def _as_user(user: str | None) -> list[str]:
    if user is None:
        return []
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]


@contextlib.contextmanager
def server(timeout_s: float = 30.0) -> Iterator[Server | None]:
    bin_dir = binaries()
    if bin_dir is None:
        yield None
        return
    run_as = "postgres" if os.geteuid() == 0 else None
    user = run_as or pwd.getpwuid(os.geteuid()).pw_name
    with tempfile.TemporaryDirectory(prefix="tribunal-pg-") as tmp:
        folder = Path(tmp)
        if run_as is not None:
            entry = pwd.getpwnam(run_as)
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        data = folder / "data"
        subprocess.run(
            [*_as_user(run_as), str(bin_dir / "initdb"), "-D", str(data), "-U", user,
             "-A", "trust", "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True,
        )  # fmt: skip
        process = subprocess.Popen(
            [*_as_user(run_as), str(bin_dir / "postgres"), "-D", str(data),
             "-k", str(folder), "-c", "listen_addresses=", "-p", str(PORT),
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
             "-c", "max_connections=200"],
            stdout=subprocess.DEVNULL, stderr=open(folder / "server.log", "wb"),  # noqa: SIM115
        )  # fmt: skip
        try:
            _wait_ready(folder, user, process, timeout_s)
            with psycopg.connect(
                f"postgresql:///postgres?host={quote(str(folder))}&user={user}", autocommit=True
            ) as conn:
                conn.execute("CREATE DATABASE tribunal")
            yield Server(folder, process, user)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # "fast shutdown": ends its sessions
                try:
                    process.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _wait_ready(
    folder: Path, user: str, process: subprocess.Popen[bytes], timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            log = (folder / "server.log").read_text(errors="replace")
            raise RuntimeError(f"PostgreSQL exited with {process.returncode}: {log[-2000:]}")
        try:
            psycopg.connect(
                f"postgresql:///postgres?host={quote(str(folder))}&user={user}", connect_timeout=2
            ).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def available() -> bool:
    return binaries() is not None and (os.geteuid() != 0 or shutil.which("setpriv") is not None)
