"""Counting the HTTP requests a docker client makes (each one a round trip to the engine).

`count_requests(client)` wraps the client's low-level APIClient (a requests.Session) so every
request is recorded as (method, path without the API version prefix and ids); the docker SDK's
own methods are unchanged. Used by the round-trip test and bench_exec_turn.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

_VERSION = re.compile(r"^/v[0-9.]+")
_ID = re.compile(r"/[0-9a-f]{12,64}(?=/|$)")


class RequestLog:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    def take(self) -> list[tuple[str, str]]:
        """The requests since the last take, and forget them."""
        taken, self.requests = self.requests, []
        return taken


def count_requests(client: Any) -> RequestLog:
    log = RequestLog()
    api = client.api
    send = api.send

    def counted(request: Any, **kwargs: Any) -> Any:
        path = _ID.sub("/{id}", _VERSION.sub("", urlsplit(request.url).path))
        log.requests.append((request.method, path))
        return send(request, **kwargs)

    api.send = counted
    return log
