import sys

from _common import emit, read_request, record_pid

record_pid()
read_request()
emit("progress", text="about to crash")
print("boom: something broke", file=sys.stderr, flush=True)
sys.exit(3)
