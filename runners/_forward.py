"""The way out of a runner container: a loopback port that leads to the credential proxy.

The runner containers have no network (`network_mode = "none"`: a loopback interface only, no
route, no DNS). The host's credential proxy listens on a unix socket that is bind-mounted into
each container (TRIBUNAL_PROXY_SOCKET). The model clients speak HTTP over TCP, so for the
length of a turn the runner listens on 127.0.0.1 (a free port of the container's own loopback)
and copies bytes between each connection and the socket; it reads none of them (the proxy is
the HTTP server). Then it points the agent's model client at that port: ANTHROPIC_BASE_URL for
Claude Code, TRIBUNAL_CODEX_BASE_URL for the Codex provider (runners/codex.py). The run token
is already in the key variable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, MutableMapping

SOCKET_VARIABLE = "TRIBUNAL_PROXY_SOCKET"
CHUNK_BYTES = 256 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK_BYTES):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def _serve(
    socket_path: str, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
) -> None:
    try:
        proxy_r, proxy_w = await asyncio.open_unix_connection(socket_path)
    except OSError:
        client_w.close()
        return
    try:
        await asyncio.gather(_pipe(client_r, proxy_w), _pipe(proxy_r, client_w))
    except asyncio.CancelledError:
        # The turn is over (asyncio.run cancels what is left): a connection the model client
        # kept open ends here, quietly; asyncio would otherwise log the cancelled handler.
        pass
    finally:
        for w in (proxy_w, client_w):
            w.close()


@contextlib.asynccontextmanager
async def forwarding(environ: MutableMapping[str, str] | None = None) -> AsyncIterator[str | None]:
    """While inside: when TRIBUNAL_PROXY_SOCKET is set, a loopback forwarder to it, with the
    model base URLs in `environ` (os.environ) pointing at it; yields its URL (else None)."""
    env = os.environ if environ is None else environ
    socket_path = env.get(SOCKET_VARIABLE)
    if not socket_path:
        yield None
        return
    server = await asyncio.start_server(
        lambda r, w: _serve(socket_path, r, w), host="127.0.0.1", port=0
    )
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env["ANTHROPIC_BASE_URL"] = url
    env["TRIBUNAL_CODEX_BASE_URL"] = f"{url}/v1"
    try:
        yield url
    finally:
        server.close()
