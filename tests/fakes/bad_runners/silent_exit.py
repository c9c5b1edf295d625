from _common import record_pid

record_pid()
