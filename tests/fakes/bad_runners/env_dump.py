import json
import os

from _common import emit, read_request, record_pid

record_pid()
request = read_request()
dump = {"env": dict(os.environ), "cwd": os.getcwd(), "request": request}
# Also as progress: a proxied run's final is refused (this runner asks no model), its progress
# still goes out.
emit("progress", text=json.dumps(dump))
emit("final", text="env", structured=dump)
