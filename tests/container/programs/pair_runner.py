"""A stand-in for `python -m runners <agent>` that plays the pair's roles (tests/container/
test_engine_set.py): the owner answers DONE, every other role APPROVED. The owner's first turn
of a workspace leaves a mark in the workspace (its container's host name: the start of the
container's id) and then waits, so the test can stop its engine mid-run; the turn run again
finds the mark and answers. Standard library only (it runs on the image's Python).
"""

import json
import os
import socket
import sys
import time

MARK = "/workspace/.first-owner-turn"


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main():
    request = json.loads(sys.stdin.readline())
    role = request["role"]
    emit(kind="session", session_id=f"{role}-{os.getpid()}", text=socket.gethostname())
    if role != "owner":
        emit(kind="final", text="APPROVED")
        return
    if not os.path.exists(MARK):
        with open(MARK, "w") as f:
            f.write(socket.gethostname())
        emit(kind="progress", text="working")
        time.sleep(600)
    emit(kind="final", text="DONE\nimplemented")


if __name__ == "__main__":
    main()
