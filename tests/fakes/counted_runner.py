"""A protocol-speaking runner that counts how many of its kind are alive at once.

Run as `python -P counted_runner.py <agent>`. Each run appends `start <pid>` to the file named
by `COUNTED_RUNNER_LOG` as soon as it starts, and `end <pid>` just before it exits; so at any
point of the file, starts minus ends is a lower bound of the runner processes alive then (a
process lives a little before its start line and after its end line).

It holds on (keeps its process alive) until more than `COUNTED_RUNNER_ENOUGH` runs are alive,
or nothing was written to the log for `COUNTED_RUNNER_QUIET_S` seconds (no other run started
or ended), so that runs overlap whenever their backend lets them. Then it answers by role:
`DONE` for the owner, `APPROVED` for the reviewer. Standard library only.
"""

import json
import os
import sys
import time

LOG = os.environ["COUNTED_RUNNER_LOG"]
ENOUGH = int(os.environ.get("COUNTED_RUNNER_ENOUGH", "1000000"))
QUIET_S = float(os.environ.get("COUNTED_RUNNER_QUIET_S", "0.4"))
ANSWERS = {"owner": "DONE\nimplemented it", "reviewer": "APPROVED"}


def record(word: str) -> None:
    # O_APPEND: one short write per line, so concurrent runs never interleave inside a line.
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{word} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


def alive() -> int:
    with open(LOG) as f:
        words = [line.split()[0] for line in f if line.strip()]
    return words.count("start") - words.count("end")


def emit(kind: str, **fields: object) -> None:
    sys.stdout.write(json.dumps({"kind": kind, **fields}) + "\n")
    sys.stdout.flush()


def main() -> None:
    record("start")
    request = json.loads(sys.stdin.readline())
    emit("progress", text="counting")
    while alive() <= ENOUGH and time.time() - os.stat(LOG).st_mtime < QUIET_S:
        time.sleep(0.02)
    record("end")
    emit("final", text=ANSWERS.get(request["role"], "DONE"))


main()
