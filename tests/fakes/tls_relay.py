"""A TLS front for a Docker-API engine on a unix socket, on loopback: what `dockerd --tlsverify`
on a remote host is to its clients. It accepts only clients whose certificate the given CA
signed, and relays each connection's bytes to the engine's socket (both ways, so the exec
attach streams of the Docker API pass too).

    with tls_relay(ca, "/tmp/…/podman.sock") as port:  # tcp://localhost:<port>
        …
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator

from tests.fakes.tls import FakeCA


def _pump(source: socket.socket, target: socket.socket, done: threading.Event) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
        if not isinstance(target, ssl.SSLSocket):
            target.shutdown(socket.SHUT_WR)  # the client is done sending: so are we
    except OSError:
        pass
    finally:
        done.set()


def _serve_one(client: ssl.SSLSocket, engine_socket: str) -> None:
    with contextlib.ExitStack() as stack:
        stack.callback(client.close)
        engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stack.callback(engine.close)
        engine.connect(engine_socket)
        done = threading.Event()
        threads = [
            threading.Thread(target=_pump, args=(client, engine, done), daemon=True),
            threading.Thread(target=_pump, args=(engine, client, done), daemon=True),
        ]
        for thread in threads:
            thread.start()
        # The engine ending its side ends the connection (a shutdown, not only a close: the
        # other thread still reads the client's socket, and a close alone sends nothing); the
        # client ending its side is passed on as a half-close, so the engine still answers.
        threads[1].join()
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def tls_relay(ca: FakeCA, engine_socket: str) -> Iterator[int]:
    """Serve on 127.0.0.1 (the port is yielded) until the block ends."""
    context = ca.server
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(ca.ca_file)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            raw.settimeout(None)
            try:
                client = context.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError):
                raw.close()  # no certificate, or one the CA did not sign
                continue
            threading.Thread(target=_serve_one, args=(client, engine_socket), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()
