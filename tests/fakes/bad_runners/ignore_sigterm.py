import signal
import time

from _common import emit, read_request, record_pid

signal.signal(signal.SIGTERM, signal.SIG_IGN)
record_pid()
read_request()
emit("progress", text="you cannot stop me politely")
while True:
    time.sleep(60)
