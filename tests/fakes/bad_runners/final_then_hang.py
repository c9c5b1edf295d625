import time

from _common import emit, read_request, record_pid

record_pid()
read_request()
emit("final", text="DONE")
while True:
    time.sleep(60)
