"""A private rootful Podman Docker-API service: `podman system service` on a socket of our own.

The bot starts one when no engine answers and Podman is installed (bot/engine_owned.py); the
container tests start one per session (tests/fakes/podman.py). `PodmanService(state_dir)` keeps
everything in `state_dir`: the socket (`podman.sock`), the containers.conf it is started with and
its log (`service.log`) and its pid (`service.pid`). `start()` waits until the socket answers a
ping; `stop()` ends only the process this object started, and what is left of its session (its
helpers). A service an earlier owner of the same folder left running (a bot killed with SIGKILL
cannot stop it) is ended by the next `start()`: it is recognised by the pid file AND its command
line naming this folder's socket, so no other process is ever touched.

The containers.conf carries the two fixes Podman 4.3 needs on our machines (notes §10): runc
instead of crun (crun fails on cgroup v1 hybrid hosts) and default ulimits lowered, with soft ==
hard because the compat API swaps soft and hard. Podman's image store stays at its default
location, so images survive between runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from container.sessions import kill_session

CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
[engine]
runtime = "runc"
"""
SOCKET_NAME = "podman.sock"
LOG_NAME = "service.log"
PID_NAME = "service.pid"


class PodmanServiceError(RuntimeError):
    """The service could not be started; the message carries the tail of its log."""


def podman_installed() -> bool:
    return shutil.which("podman") is not None


def answers(docker_host: str, timeout_s: int = 5) -> bool:
    """Whether a Docker-API engine at `docker_host` answers a ping (never raises)."""
    import docker

    try:
        client = docker.DockerClient(base_url=docker_host, timeout=timeout_s)
    except Exception:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


class PodmanService:
    """One `podman system service` process, started by `start` and ended by `stop`."""

    def __init__(self, state_dir: Path, env: dict[str, str] | None = None) -> None:
        self.state_dir = state_dir
        self.env = dict(env or {})  # more of the service's environment (e.g. its storage.conf)
        self.socket_path = state_dir / SOCKET_NAME
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket_path}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.state_dir / LOG_NAME).read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def start(self, *, ready_timeout_s: float = 20.0) -> PodmanService:
        """Start the service and wait until it answers; raises PodmanServiceError otherwise
        (and then nothing of it is left running)."""
        if self.process is not None:
            raise PodmanServiceError("this PodmanService was started already")
        if not podman_installed():
            raise PodmanServiceError("podman is not installed")
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        conf = self.state_dir / "containers.conf"
        conf.write_text(CONTAINERS_CONF)
        self.end_leftover()
        # A socket file left by a process that is gone (e.g. a killed bot) would block the bind.
        self.socket_path.unlink(missing_ok=True)
        env = {**os.environ, "CONTAINERS_CONF": str(conf), **self.env}
        with (self.state_dir / LOG_NAME).open("wb") as log:
            self.process = subprocess.Popen(
                ["podman", "system", "service", "--time=0", self.docker_host],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                # conmon writes an `oom` marker file into its working directory when a
                # container hits its memory limit: keep that out of the caller's folder.
                cwd=self.state_dir,
                # A Ctrl-C at the terminal must not end the engine before the caller has
                # removed its containers: the caller stops it, last.
                start_new_session=True,
            )
        (self.state_dir / PID_NAME).write_text(f"{self.process.pid}\n")
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                self.process = None
                raise PodmanServiceError(
                    f"podman system service exited with {code}: {self.log_tail()}"
                )
            if self.socket_path.exists() and answers(self.docker_host):
                return self
            time.sleep(0.1)
        self.stop()
        raise PodmanServiceError(
            f"podman system service did not answer on {self.socket_path} in "
            f"{ready_timeout_s:g}s: {self.log_tail()}"
        )

    def stop(self, *, grace_s: float = 10.0) -> None:
        """End the process `start` began (SIGTERM, SIGKILL after `grace_s`) and remove its
        socket file. Idempotent; never touches any other podman process."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=grace_s)
        # Its helpers (a build's or a container's processes it started) must not outlive it:
        # the service leads a session of its own, so they are that session's members.
        kill_session(process.pid)
        self.socket_path.unlink(missing_ok=True)
        (self.state_dir / PID_NAME).unlink(missing_ok=True)

    def leftover_pid(self) -> int | None:
        """The pid in `service.pid` when that process is still this folder's podman service."""
        try:
            pid = int((self.state_dir / PID_NAME).read_text().strip())
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return None
        ours = b"system" in argv and b"service" in argv and self.docker_host.encode() in argv
        return pid if ours else None

    def end_leftover(self, *, grace_s: float = 10.0) -> None:
        pid = self.leftover_pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while self.leftover_pid() == pid and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.leftover_pid() == pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
