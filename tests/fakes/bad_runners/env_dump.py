import os

from _common import emit, read_request, record_pid

record_pid()
request = read_request()
emit(
    "final",
    text="env",
    structured={"env": dict(os.environ), "cwd": os.getcwd(), "request": request},
)
