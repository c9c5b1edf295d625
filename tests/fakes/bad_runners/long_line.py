import sys

from _common import read_request, record_pid

record_pid()
read_request()
sys.stdout.write('{"kind": "progress", "text": "')
while True:
    sys.stdout.write("y" * 65536)
    sys.stdout.flush()
