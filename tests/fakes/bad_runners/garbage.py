import sys
import time

from _common import emit, read_request, record_pid

record_pid()
read_request()
emit("progress", text="fine so far")
sys.stdout.write("Traceback? no, just some text that is not an event\n")
sys.stdout.flush()
while True:
    time.sleep(60)
