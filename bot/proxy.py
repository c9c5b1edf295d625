"""The credential proxy (container/proxy/), as the bot runs it, for either backend.

One proxy per bot process, started before the first turn and stopped after the last. It holds
the model keys of the settings (ANTHROPIC_API_KEY, OPENAI_API_KEY) and forwards to their base
URLs (ANTHROPIC_BASE_URL, OPENAI_BASE_URL; the public APIs when unset). Every model turn goes
through it, on both backends, because it is what checks that a turn's final answer is the
model's (container/proxy/finals.py).

- Docker backend: it listens on a unix socket in `<TRIBUNAL_DATA>/proxy/`, or `[docker]
  proxy_dir` (mode 0711: the
  container user may reach the socket, not list the folder), which the runner containers mount
  read-only; a data folder whose path is too long for a socket address uses a folder of the
  instance's name under the temp dir instead.
- Local backend: it listens on 127.0.0.1 (a free port), and the runners, processes of this
  machine, are given that URL and their run token instead of the keys.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from bot.settings import Settings
from container.docker_pool import PROXY_MOUNT
from container.proxy import CredentialProxy, Upstream
from container.proxy.runner import ProxyEndpoint
from runners.protocol import ModelAgent

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com/v1"
SOCKET_NAME = "proxy.sock"
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes


def upstreams(settings: Settings) -> dict[ModelAgent, Upstream]:
    """The model APIs the proxy forwards to. An agent type with neither a key nor a base URL
    gets none (its runs are refused with 401); a base URL without a key (a model server of
    one's own) is forwarded to without one."""
    found: dict[ModelAgent, Upstream] = {}
    configured = (
        ("claude", settings.anthropic_api_key, settings.anthropic_base_url, ANTHROPIC_API),
        ("codex", settings.openai_api_key, settings.openai_base_url, OPENAI_API),
    )
    for agent, key, base_url, public in configured:
        if key is not None or base_url:
            secret = key.get_secret_value() if key is not None else ""
            found[agent] = Upstream(base_url or public, secret)  # type: ignore[index]
    return found


def server_tools_groups(settings: Settings) -> frozenset[str]:
    """The groups whose turns may use the model APIs' server tools (`server_tools = true`)."""
    return frozenset(name for name, *_, group in settings.all_groups() if group.server_tools)


def socket_dir(settings: Settings) -> Path:
    folder = settings.docker.proxy_dir or settings.data.resolve() / "proxy"
    if len(str(folder / SOCKET_NAME)) > MAX_SOCKET_PATH:
        digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
        folder = Path(tempfile.gettempdir()) / f"tribunal-proxy-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user; refusing to serve keys there")
    os.chmod(folder, 0o711)
    return folder


@contextlib.asynccontextmanager
async def running_proxy(settings: Settings) -> AsyncIterator[tuple[CredentialProxy, Path]]:
    """The started proxy and its socket folder (to mount); stopped on exit."""
    proxy = CredentialProxy(upstreams(settings))
    folder = socket_dir(settings)
    await proxy.listen_unix(folder / SOCKET_NAME)
    try:
        yield proxy, folder
    finally:
        await proxy.close()


def container_endpoint() -> ProxyEndpoint:
    """How the runners in the containers reach the proxy: its socket, forwarded on loopback."""
    return ProxyEndpoint(socket=f"{PROXY_MOUNT}/{SOCKET_NAME}")


@contextlib.asynccontextmanager
async def running_local_proxy(settings: Settings) -> AsyncIterator[CredentialProxy]:
    """The started proxy on loopback, for the local backend's runners; stopped on exit."""
    proxy = CredentialProxy(upstreams(settings))
    await proxy.listen_tcp("127.0.0.1")
    try:
        yield proxy
    finally:
        await proxy.close()


def local_endpoint(proxy: CredentialProxy) -> ProxyEndpoint:
    """How the local backend's runners reach the proxy: its loopback URL."""
    assert proxy.tcp_url is not None, "the proxy is not listening on TCP"
    return ProxyEndpoint(url=proxy.tcp_url)
