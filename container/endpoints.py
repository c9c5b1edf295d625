"""Where a Docker-API engine answers, and how to reach it: a unix socket, or `tcp://` with TLS.

A remote engine's API is root on its host, so `tcp://` is only accepted with mutual TLS: the CA
that signed the engine's certificate (`tls_ca`, the engine is verified against it) and this
bot's client certificate and key (`tls_cert`, `tls_key`), as `dockerd --tlsverify` expects
them. A plain `tcp://` endpoint is refused by `problems`, never quietly used.

`problems` is what the settings check (bot/settings_sections.py): every file named must be a
readable file now, so a typo is a settings error at start, not a failed turn later.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

SCHEMES = ("unix://", "tcp://")
TLS_FILES = ("tls_ca", "tls_cert", "tls_key")


@dataclass(frozen=True)
class Endpoint:
    """One engine. `host` None: DOCKER_HOST of the environment, else the default socket."""

    host: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def remote(self) -> bool:
        return bool(self.host and self.host.startswith("tcp://"))

    @property
    def name(self) -> str:
        """How logs, `doctor` and `status` name the engine."""
        return self.host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"

    def problems(self) -> list[str]:
        """What is wrong with this endpoint as written (empty: usable as far as files go)."""
        host = self.host or ""
        if self.host is not None and not host.startswith(SCHEMES):
            return [f"{host!r}: use unix:///path/to/socket or tcp://host:port (with TLS)"]
        tls = {name: getattr(self, name) for name in TLS_FILES}
        if not self.remote:
            given = [name for name, path in tls.items() if path]
            return [f"{host}: {', '.join(given)} only apply to tcp:// engines"] if given else []
        missing = [name for name, path in tls.items() if not path]
        if missing:
            return [
                f"{host}: a tcp:// engine needs TLS client certificates: set "
                f"{', '.join(missing)} (a remote engine's API is root on its host)"
            ]
        found = []
        for name, path in tls.items():
            assert path is not None
            if not os.path.isfile(path):
                found.append(f"{host}: {name} {path}: no such file")
            elif not os.access(path, os.R_OK):
                found.append(f"{host}: {name} {path}: not readable by this user")
        return found

    def connect(self, timeout: int = 120) -> Any:
        """A docker.DockerClient for this engine (the SDK negotiates the API version here)."""
        import docker
        from docker.tls import TLSConfig

        if self.host is None:
            return docker.from_env(timeout=timeout)
        if not (self.tls_cert and self.tls_key and self.tls_ca):
            # DOCKER_HOST as it always was (the settings refuse a plain tcp:// in `engines`).
            return docker.DockerClient(base_url=self.host, timeout=timeout)
        tls = TLSConfig(client_cert=(self.tls_cert, self.tls_key), ca_cert=self.tls_ca, verify=True)
        return _tls_client_class()(base_url=self.host, tls=tls, timeout=timeout)


@functools.cache
def _tls_client_class() -> type:
    """The docker SDK's client with the engine's CA kept (made once; the SDK loads lazily)."""
    import docker

    class TLSAPIClient(docker.APIClient):  # type: ignore[misc]
        def merge_environment_settings(
            self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any
        ) -> Any:
            # requests lets REQUESTS_CA_BUNDLE (or CURL_CA_BUNDLE) replace the session's CA
            # whenever a request names none, as the docker SDK's never do (requests issue
            # 3829): the engine would be checked against the system's CAs, not its own.
            verify = self.verify if verify is None else verify
            return super().merge_environment_settings(url, proxies, stream, verify, cert)

    class TLSClient(docker.DockerClient):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            self.api = TLSAPIClient(**kwargs)

    return TLSClient


def answers(endpoint: Endpoint, image: str | None = None, timeout_s: int = 5) -> str | None:
    """None when the engine answers a ping within `timeout_s` (and holds `image`, when given),
    else why not, in one line. Blocking; never raises."""
    try:
        client = endpoint.connect(timeout=timeout_s)
    except Exception as exc:
        return _reason(exc)
    try:
        client.ping()
    except Exception as exc:
        return _reason(exc)
    try:
        if image is not None:
            client.images.get(image)
    except Exception as exc:
        return f"no image {image}: {_reason(exc)}"
    finally:
        client.close()
    return None


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
