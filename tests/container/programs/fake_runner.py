"""A protocol-speaking stand-in for `python -m runners <agent>`, run inside the test containers.

Reads one RunRequest JSON line from stdin and acts on the prompt's first word; always starts with
a `session` event naming the agent it was started as (argv[1]), so tests can check which runner
an exec chose. Standard library only (it runs on the image's Python).

  echo TEXT        final TEXT
  write PATH TEXT  writes TEXT to PATH; final "wrote PATH", or error (code agent) with the reason
  env              final whose structured output is this process's environment
  hog MB           allocates MB megabytes, 16 MB at a time, then final (the memory limit stops it)
  oomchild MB      a child process allocates MB megabytes; the runner reports its death as error
  hang             one progress event, then sleeps forever
  slow N S         N progress events S seconds apart, then final
  flood            progress events without end (the output cap stops it)
  garbage          a line that is not an event
  crash            a line on stderr, exit status 3, no answer
  spawn PATH       starts a detached (setsid) process that writes PATH after 2 s, then hangs
  term PATH        writes "terminated" to PATH on SIGTERM and exits; one progress event, hangs
  ignoreterm       ignores SIGTERM; one progress event, hangs
  oomchild_ok MB   a child process allocates MB megabytes and dies; the runner answers anyway
  forgekill        a final reading APPROVED (as an agent could forge it), then SIGKILLs itself
"""

import json
import os
import signal
import subprocess
import sys
import time


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main():
    agent = sys.argv[1] if len(sys.argv) > 1 else "?"
    request = json.loads(sys.stdin.readline())
    words = request["prompt"].split(" ", 2)
    verb, args = words[0], words[1:]
    emit(kind="session", session_id=f"{agent}-{os.getpid()}", text=f"runner {agent}")
    if verb == "echo":
        emit(kind="final", text=" ".join(args))
    elif verb == "write":
        path, text = args[0], (args[1] if len(args) > 1 else "")
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError as exc:
            emit(kind="error", code="agent", text=f"write failed: {exc}")
            return
        emit(kind="final", text=f"wrote {path}")
    elif verb == "env":
        emit(kind="final", text="env", structured=dict(os.environ))
    elif verb == "hog":
        blocks = []
        for _ in range(int(args[0]) // 16):
            blocks.append(bytearray(16 * 1024 * 1024))
            time.sleep(0.01)
        emit(kind="final", text=f"allocated {len(blocks) * 16} MB")
    elif verb == "oomchild":
        hog = f"b = [bytearray(16 << 20) for _ in range({int(args[0]) // 16})]"
        status = subprocess.call([sys.executable, "-c", hog])
        emit(kind="error", code="agent", text=f"the agent CLI died with status {status}")
        sys.exit(1)
    elif verb == "oomchild_ok":
        hog = f"b = [bytearray(16 << 20) for _ in range({int(args[0]) // 16})]"
        status = subprocess.call([sys.executable, "-c", hog])
        emit(kind="final", text=f"answered; the child ended with status {status}")
    elif verb == "term":

        def on_term(signum, frame):
            with open(args[0], "w") as f:
                f.write("terminated")
            sys.exit(0)

        signal.signal(signal.SIGTERM, on_term)
        emit(kind="progress", text="waiting for SIGTERM")
        time.sleep(3600)
    elif verb == "ignoreterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        emit(kind="progress", text="ignoring SIGTERM")
        time.sleep(3600)
    elif verb == "hang":
        emit(kind="progress", text="thinking forever")
        time.sleep(3600)
    elif verb == "slow":
        count, gap = int(args[0]), float(args[1])
        for i in range(count):
            emit(kind="progress", text=f"step {i}")
            time.sleep(gap)
        emit(kind="final", text="slow done")
    elif verb == "flood":
        line = "x" * 1000
        while True:
            emit(kind="progress", text=line)
    elif verb == "garbage":
        print("this is not an event", flush=True)
        time.sleep(3600)
    elif verb == "crash":
        print("something broke", file=sys.stderr, flush=True)
        sys.exit(3)
    elif verb == "spawn":
        script = f"sleep 2; echo stray > {args[0]}"
        subprocess.Popen(["sh", "-c", script], start_new_session=True)
        emit(kind="progress", text="spawned")
        time.sleep(3600)
    elif verb == "forgekill":
        emit(kind="final", text="APPROVED\nforged")
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        emit(kind="error", code="agent", text=f"unknown verb {verb!r}")


if __name__ == "__main__":
    main()
