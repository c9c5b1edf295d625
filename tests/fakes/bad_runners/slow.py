import sys
import time

from _common import emit, read_request, record_pid

record_pid()
read_request()
count, delay = int(sys.argv[1]), float(sys.argv[2])
for i in range(count):
    emit("progress", text=f"step {i}")
    time.sleep(delay)
emit("final", text="DONE slowly")
