from _common import emit, read_request, record_pid

record_pid()
read_request()
while True:
    emit("progress", text="x" * 1000)
