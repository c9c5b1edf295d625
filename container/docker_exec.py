"""One runner exec inside a long-lived container, through the docker SDK's low-level API.

The request goes to the exec's stdin: `exec_create(stdin=True)` + `exec_start(socket=True)` gives a
raw socket; we send the line and half-close it (`shutdown(SHUT_WR)`), so the runner sees EOF
(not over TLS, which cannot half-close: see `pump`).
Checked with Podman 4.3's compat API (the put_archive alternative would write under a tmpfs
mount point, not into it). The socket carries the multiplexed stream (8-byte frame headers:
stream 1 = stdout, 2 = stderr), which two threads pump into an asyncio.Queue: the docker SDK is
synchronous and must never block the event loop.

exec_inspect reports no pid on Podman, and exec_run has no timeout, so the runner is started
under a tiny `sh` wrapper that records its pid (`/tmp/.tribunal/<run>.pid`) and then `exec`s the
runner; the pid is also the process group id (an exec'd process leads its own group). `kill_run`
stops that group from a second exec (SIGTERM, so the runner can end its agent CLI and the
processes it started; SIGKILL after a short grace), then kills whatever else the runner left in
the container (processes that called setsid), keeping only init and the idle `sleep infinity`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
import threading
from collections.abc import Sequence
from typing import Any

PID_DIR = "/tmp/.tribunal"
IDLE_COMMAND = ("sleep", "infinity")
# Started as `sh -c WRAPPER tribunal-run <run id> <argv...>`. The wrapper first reads one line
# (GATE, sent before the request) and only then execs the runner: Podman loses the output of an
# exec that ends before its attach is connected ("read unixpacket …/attach: connection reset by
# peer", podman#11446), and data on stdin proves the attach is live. A runner that fails at once
# (a missing program) would otherwise lose the stderr that says why. `read` reads byte by byte
# from a pipe, so the request stays for the runner; at EOF (a detached exec) it goes on at once.
GATE = b"\n"
# The container's OOM-kill counter (memory cgroup v1, then v2), read with shell builtins only.
_OOM_READ = (
    "n=; for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do "
    '[ -r "$f" ] && while read -r k v; do [ "$k" = oom_kill ] && n=${n:-$v}; done < "$f"; done; '
)
# The wrapper's first stderr line, before the runner exists: the counter as the run begins, so
# no exec of its own is needed to know it (one round trip to the engine instead of three).
OOM_MARK = b"tribunal-oom-count "
WRAPPER = (
    f'{{ [ -d {PID_DIR} ] || mkdir -p {PID_DIR}; }} && echo $$ > {PID_DIR}/"$1".pid && shift && '
    "{ IFS= read -r _; " + _OOM_READ + f'echo "{OOM_MARK.decode()}${{n:--}}" >&2; exec "$@"; }}'
)
# Every process but init, the idle sleep and the shell that runs this: what a run left behind after
# its group was killed (processes that called setsid, as Claude Code's Bash tool does).
_STRAYS = (
    "for p in /proc/[0-9]*; do p=${p#/proc/}; "
    '[ "$p" = 1 ] || [ "$p" = $$ ] && continue; '
    "c=$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null); "
    '[ "$c" = "sleep infinity " ] && continue; '
    "kill -s KILL $p 2>/dev/null; done; "
)
# `sh -c KILLER tribunal-kill <run id> <grace in tenths of a second>`: SIGTERM to the run's group,
# SIGKILL once the grace is over (at once when the group is gone before), then every other process
# but init, the idle sleep and this shell. Turns of one container run one at a time, so nothing
# else is there.
KILLER = (
    f'pg=$(cat {PID_DIR}/"$1".pid 2>/dev/null); '
    'if [ -n "$pg" ]; then kill -s TERM -- "-$pg" "$pg" 2>/dev/null; n=0; '
    'while [ "$n" -lt "$2" ] && kill -s 0 -- "-$pg" 2>/dev/null; do sleep 0.1; n=$((n+1)); done; '
    'kill -s KILL -- "-$pg" "$pg" 2>/dev/null; fi; ' + _STRAYS + f'rm -f {PID_DIR}/"$1".pid; true'
)
# Kills every recorded run and whatever else runs: used when a container from an earlier bot
# process is reused (a bot killed mid-turn left its exec running, and nothing of ours runs in
# the container yet), so a stray that left the run's group goes too (issue 27 #13).
KILL_ALL = (
    f'for f in {PID_DIR}/*.pid; do [ -f "$f" ] || continue; '
    'pg=$(cat "$f"); kill -s KILL -- "-$pg" "$pg" 2>/dev/null; rm -f "$f"; done; '
    + _STRAYS
    + "true"
)

# The memory cgroup's OOM-kill counter (cgroup v1, then v2), read from inside the container.
OOM_COUNT = "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null"

STDOUT, STDERR = 1, 2
Chunk = tuple[int, bytes] | None  # (stream, data); None = the exec's output ended


class ExecSession:
    """A started exec: its socket, the threads pumping it, and how it ended."""

    def __init__(self, api: Any, container_id: str, exec_id: str, sock: socket.socket) -> None:
        self.api = api
        self.container_id = container_id
        self.exec_id = exec_id
        self.sock = sock
        self._threads: list[threading.Thread] = []

    @classmethod
    def start(
        cls,
        api: Any,
        container_id: str,
        run_id: str,
        argv: Sequence[str],
        env: dict[str, str],
        workdir: str | None,
    ) -> ExecSession:
        """Blocking: create and start the exec (call it through asyncio.to_thread)."""
        cmd = ["sh", "-c", WRAPPER, "tribunal-run", run_id, *argv]
        created = api.exec_create(
            container_id, cmd, stdin=True, stdout=True, stderr=True, environment=env,
            workdir=workdir,
        )  # fmt: skip
        exec_id = created["Id"]
        raw = api.exec_start(exec_id, socket=True)
        sock = getattr(raw, "_sock", raw)  # SocketIO wrapper on unix sockets
        # The socket inherits the client's request timeout; a runner may rightly be silent for
        # longer (the idle timeout is ours to enforce), and a timeout would read as EOF.
        sock.settimeout(None)
        return cls(api, container_id, exec_id, sock)

    def pump(self, request: bytes, loop: asyncio.AbstractEventLoop) -> asyncio.Queue[Chunk]:
        """Send the request, and stream the output into the returned queue (ends with None)."""
        queue: asyncio.Queue[Chunk] = asyncio.Queue()

        def put(item: Chunk) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def send() -> None:
            # A runner that never reads its stdin must not block the reader: own thread.
            with contextlib.suppress(OSError):
                self.sock.sendall(GATE + request)
                # Over TLS (a tcp:// engine) there is no half-close: Python's ssl drops the
                # stream's TLS state on shutdown, and the output could no longer be read. The
                # runner reads one line, and gives its children stdin of their own, so nothing
                # waits for the EOF it then never sees.
                if not isinstance(self.sock, ssl.SSLSocket):
                    self.sock.shutdown(socket.SHUT_WR)

        def receive() -> None:
            try:
                while header := _read_exact(self.sock, 8):
                    stream, size = header[0], struct.unpack(">I", header[4:8])[0]
                    data = _read_exact(self.sock, size)
                    if data is None:
                        break
                    put((stream, data))
            except OSError:
                pass
            finally:
                put(None)

        for target in (send, receive):
            thread = threading.Thread(target=target, daemon=True, name=f"exec-{target.__name__}")
            thread.start()
            self._threads.append(thread)
        return queue

    def status(self) -> tuple[bool, int | None]:
        """(still running, exit code) from exec_inspect; blocking."""
        info = self.api.exec_inspect(self.exec_id)
        return bool(info.get("Running")), info.get("ExitCode")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def run_script(api: Any, container_id: str, script: str, *args: str) -> tuple[int | None, bytes]:
    """Run a short `sh -c` script in the container and wait for it; blocking."""
    created = api.exec_create(container_id, ["sh", "-c", script, "tribunal", *args])
    output = api.exec_start(created["Id"])
    return api.exec_inspect(created["Id"]).get("ExitCode"), output or b""


def kill_run(api: Any, container_id: str, run_id: str, grace_s: float = 0.0) -> None:
    """Stop a run's process group (SIGTERM, SIGKILL after `grace_s`) and kill its strays;
    blocking; never raises for a gone container."""
    with contextlib.suppress(Exception):
        run_script(api, container_id, KILLER, run_id, str(max(0, round(grace_s * 10))))


def oom_kills(api: Any, container_id: str) -> int | None:
    """How many processes the container's memory limit has killed so far (None: unknown)."""
    try:
        _, output = run_script(api, container_id, OOM_COUNT)
    except Exception:
        return None
    for line in output.decode(errors="replace").splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def prelude_count(line: bytes) -> int | None:
    """The OOM-kill count in the wrapper's first stderr line (OOM_MARK), None when the line is
    no such line or the count is unknown ("-": no memory cgroup to read)."""
    if not line.startswith(OOM_MARK):
        return None
    value = line[len(OOM_MARK) :].strip()
    return int(value) if value.isdigit() else None


def _read_exact(sock: socket.socket, size: int) -> bytes | None:
    """Exactly `size` bytes, or None when the stream ends first."""
    parts = bytearray()
    while len(parts) < size:
        data = sock.recv(min(size - len(parts), 1 << 16))
        if not data:
            return None
        parts += data
    return bytes(parts)
