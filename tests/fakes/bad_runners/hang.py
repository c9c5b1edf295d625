import subprocess
import time

from _common import emit, read_request, record_pid

record_pid()
read_request()
child = subprocess.Popen(["sleep", "600"])  # stays in the runner's process group
record_pid(child.pid)
emit("progress", text="working (not really)")
while True:
    time.sleep(60)
