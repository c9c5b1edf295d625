"""Start part of compose.yaml for real on this machine: `db` and `migrate` (not in the suite).

    .venv/bin/python -m tests.fakes.compose

The machines reach no container registry, so `postgres:15-bookworm`, `python:3.11-slim-bookworm`
(bot/Dockerfile's base) and `docker:27-dind` cannot be pulled. This builds stand-ins for the
first two from the tests' registry-free base (Debian's PostgreSQL 15 with the official image's
variables; Python 3.11 with pip), starts a Podman service of its own, and runs Debian's
`docker-compose` (v1) on compose.yaml with override.yaml: it builds the bot image from
bot/Dockerfile (pip installs the bot from PyPI: a few minutes), starts `db`, waits for its
health check and runs `migrate` (`tribunal migrate` against TRIBUNAL_DB, the `db` service by
name). The exit status is migrate's. `engine` (Docker in Docker) and the two bots are not
started: no stand-in for dind here, and a bot with tokens would try to reach Slack.

Podman 4.3 runs health checks from systemd timers, which this machine lacks: the check stays
"starting" and `service_healthy` would wait forever, so this runs `podman healthcheck run` on
the database every few seconds (as systemd would).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from container.podman_service import PodmanService
from tests.fakes.podman import engine, ensure_base_image

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
PROJECT = "tribunalsmoke"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def build_stand_ins(docker_host: str, base: str) -> None:
    with tempfile.TemporaryDirectory(prefix="compose-stand-ins-") as tmp:
        context = Path(tmp)
        for name in ("postgres.Dockerfile", "postgres-entrypoint.sh", "python.Dockerfile"):
            shutil.copy2(HERE / name, context / name)
        shutil.copy2(CA_BUNDLE, context / "ca.crt")
        for tag, dockerfile in (
            ("localhost/tribunal-compose-postgres:test", "postgres.Dockerfile"),
            ("localhost/tribunal-compose-python:test", "python.Dockerfile"),
        ):
            print(f"== building {tag}", flush=True)
            subprocess.run(
                ["podman", "--url", docker_host, "build", "-q",
                 "--build-arg", f"BASE={base}", "-t", tag, "-f", dockerfile, "."],
                cwd=context, check=True,
            )  # fmt: skip


def main() -> int:
    compose = shutil.which("docker-compose")
    if compose is None:
        print("docker-compose is not installed (apt-get install docker-compose)", file=sys.stderr)
        return 1
    with engine() as client:
        if client is None:
            print("no engine: podman is not installed", file=sys.stderr)
            return 1
        base = ensure_base_image(client)
    with tempfile.TemporaryDirectory(prefix="compose-smoke-") as tmp:
        folder = Path(tmp)
        service = PodmanService(folder / "engine").start()
        stop = threading.Event()
        try:
            build_stand_ins(service.docker_host, base)
            project = folder / "project"
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True
            )
            project.mkdir()
            subprocess.run(["tar", "-x", "-C", str(project)], input=archive.stdout, check=True)
            (project / ".env").write_text("POSTGRES_PASSWORD=smoke4tests\n")
            (project / "tribunal.toml").write_text("")
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "DOCKER_HOST": service.docker_host}
            command = [
                compose,
                "-p",
                PROJECT,
                "-f",
                "compose.yaml",
                "-f",
                str(HERE / "override.yaml"),
            ]
            conf = {"CONTAINERS_CONF": str(service.state_dir / "containers.conf")}

            def health() -> None:  # what systemd's timer would do
                while not stop.wait(3):
                    subprocess.run(
                        ["podman", "--url", service.docker_host,
                         "healthcheck", "run", f"{PROJECT}_db_1"],
                        capture_output=True, env={**env, **conf},
                    )  # fmt: skip

            threading.Thread(target=health, daemon=True).start()
            up = subprocess.run(
                [*command, "up", "--build", "--exit-code-from", "migrate", "migrate"],
                cwd=project,
                env=env,
            )
            subprocess.run([*command, "down", "-v", "--rmi", "local"], cwd=project, env=env)
            print(f"== migrate exited with {up.returncode}")
            return up.returncode
        finally:
            stop.set()
            service.stop()


if __name__ == "__main__":
    raise SystemExit(main())
