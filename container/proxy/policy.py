"""What of a runner's request reaches the model API: allow-lists per API, so that the model API
cannot become the agents' way to the network.

A runner container has no network (`network_mode = "none"`); its one way out is the proxy, and
the model APIs can fetch URLs for a caller: Anthropic's server tools (web search, web fetch,
code execution), its MCP connector (`mcp_servers`: the API calls any MCP server named in the
body), image and document blocks with a `url` source; OpenAI's hosted tools (web_search,
file_search, mcp, code_interpreter, image_generation), `input_image`/`input_file` given by URL,
and stored prompts (which may carry hosted tools). So, for each request:

- headers: only those on the API's allow-list are copied (what Claude Code, Codex and the
  SDKs send: content type, user agent, API version, the SDKs' `x-stainless-*`, the CLIs'
  session headers); `anthropic-beta` keeps only the beta names on `ANTHROPIC_BETAS`, which has
  no server-tool, MCP, files or skills beta (any other name is dropped, and logged once);
  everything else (X-Forwarded-Host, cookies, organisation or project headers…) is dropped;
- the query string is dropped, but for the `beta=true` Anthropic's SDK adds on its beta paths;
- the body must be a JSON object; a tool whose type is not on the API's list of client-side
  tools, `mcp_servers`, `container`, a stored `prompt`, or a content block that has the API
  fetch a URL is refused with 400 in the API's own error format, and nothing is forwarded.

Client-side tools are tools the runner executes itself, inside its container: Anthropic's
custom tools (no type, or `custom`) and its versioned client tools (bash, text editor,
computer use, memory); OpenAI's `function`, `custom`, `namespace` (a group of those),
`local_shell`, `shell`, `apply_patch` and `computer_use_preview`. Anthropic's tool search
(`tool_search_tool_*`) runs on the API's side but only searches the request's own tools, so it
passes too.

A group with `server_tools = true` turns the body checks and the beta filter off for its turns
(the server tools then reach the network for its agents); the header allow-list and the query
string rule hold for every group.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from container.proxy.usage import ANTHROPIC, OPENAI

log = logging.getLogger(__name__)

ANTHROPIC_HEADERS = frozenset(
    {
        "accept", "content-type", "user-agent", "anthropic-version", "anthropic-beta",
        "anthropic-dangerous-direct-browser-access", "x-app", "x-claude-code-session-id",
    }
)  # fmt: skip
OPENAI_HEADERS = frozenset(
    {
        "accept", "content-type", "user-agent", "originator", "session-id", "session_id",
        "thread-id", "conversation_id", "x-client-request-id",
        "x-openai-internal-codex-responses-lite",
    }
)  # fmt: skip
HEADER_PREFIXES: Mapping[str, tuple[str, ...]] = {
    ANTHROPIC: ("x-stainless-",),
    OPENAI: ("x-stainless-", "x-codex-"),
}
# What Claude Code 2.1.332 sends, and the SDKs' client-side betas. Not here on purpose:
# mcp-client-*, web-fetch-*, code-execution-*, files-api-*, skills-*, and any name not listed.
ANTHROPIC_BETAS = frozenset(
    {
        "claude-code-20250219", "interleaved-thinking-2025-05-14",
        "context-management-2025-06-27", "per-turn-control-2026-07-01",
        "mid-conversation-tool-changes-2026-07-01", "thinking-token-count-2026-05-13",
        "advanced-tool-use-2025-11-20", "effort-2025-11-24", "thinking-display-updates-2026-08-18",
        "prompt-caching-2024-07-31", "extended-cache-ttl-2025-04-11", "token-counting-2024-11-01",
        "token-efficient-tools-2025-02-19", "fine-grained-tool-streaming-2025-05-14",
        "output-128k-2025-02-19", "context-1m-2025-08-07", "structured-outputs-2025-11-13",
        "computer-use-2025-01-24", "computer-use-2025-11-24",
    }
)  # fmt: skip
ANTHROPIC_CLIENT_TOOL_PREFIXES = (
    "bash_", "text_editor_", "computer_", "memory_", "tool_search_tool_",
)  # fmt: skip
OPENAI_CLIENT_TOOLS = frozenset(
    {"function", "custom", "namespace", "local_shell", "shell", "apply_patch",
     "computer_use_preview"}
)  # fmt: skip
ANTHROPIC_REFUSED_KEYS = {
    "mcp_servers": "the MCP connector (mcp_servers) has the API call MCP servers",
    "container": "a code execution container runs on the API's side",
}
OPENAI_REFUSED_KEYS = {"prompt": "a stored prompt may carry hosted tools"}
SERVER_TOOLS_HINT = (
    "the agents have no network, and this would have the model API reach it for them "
    "(a group may allow it with server_tools = true)"
)
_dropped_betas: set[str] = set()  # logged once each


class Refusal(Exception):
    """The request is not forwarded: `status` and `message` for the API-format error."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Checked:
    """A request that may be forwarded: what to send, and what it may cost."""

    headers: dict[str, str]
    query: str
    model: str | None = None
    max_output: int | None = None  # the request's output limit, when it names one


def check(
    api: str,
    headers: Iterable[tuple[str, str]],
    query: Mapping[str, str],
    body: bytes,
    *,
    server_tools: bool,
) -> Checked:
    """The request as it may be forwarded, or `Refusal`."""
    kept = _headers(api, headers, server_tools)
    forwarded_query = "beta=true" if api == ANTHROPIC and query.get("beta") == "true" else ""
    if not body:
        return Checked(kept, forwarded_query)
    try:
        data = json.loads(body)
    except ValueError:
        raise Refusal(400, "Tribunal proxy: the request body is not JSON") from None
    if not isinstance(data, dict):
        raise Refusal(400, "Tribunal proxy: the request body is not a JSON object")
    if not server_tools:
        if api == ANTHROPIC:
            _check_anthropic(data)
        else:
            _check_openai(data)
    model = data.get("model")
    limit = data.get("max_tokens" if api == ANTHROPIC else "max_output_tokens")
    return Checked(
        kept,
        forwarded_query,
        model if isinstance(model, str) else None,
        limit if isinstance(limit, int) and limit > 0 else None,
    )


def _headers(api: str, headers: Iterable[tuple[str, str]], server_tools: bool) -> dict[str, str]:
    allowed = ANTHROPIC_HEADERS if api == ANTHROPIC else OPENAI_HEADERS
    prefixes = HEADER_PREFIXES[api]
    kept: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        if lower in allowed or lower.startswith(prefixes):
            kept[lower] = value
    beta = kept.pop("anthropic-beta", None)
    if beta is not None and api == ANTHROPIC:
        names = [n.strip() for n in beta.split(",") if n.strip()]
        if not server_tools:
            for name in set(names) - ANTHROPIC_BETAS - _dropped_betas:
                log.warning("proxy: dropped the anthropic-beta %r (not on the allow-list)", name)
                _dropped_betas.add(name)
            names = [n for n in names if n in ANTHROPIC_BETAS]
        if names:
            kept["anthropic-beta"] = ",".join(names)
    return kept


def _refuse(what: str) -> Refusal:
    return Refusal(400, f"Tribunal proxy: {what} is not allowed: {SERVER_TOOLS_HINT}")


def _check_anthropic(data: dict[str, Any]) -> None:
    for key, why in ANTHROPIC_REFUSED_KEYS.items():
        if data.get(key):
            raise _refuse(f"`{key}` ({why})")
    for tool in _list(data.get("tools")):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind in (None, "custom") or str(kind).startswith(ANTHROPIC_CLIENT_TOOL_PREFIXES):
            continue
        raise _refuse(f"the server tool {kind!r}")
    for message in _list(data.get("messages")):
        if isinstance(message, dict):
            _check_anthropic_blocks(message.get("content"))


def _check_anthropic_blocks(content: object) -> None:
    for block in _list(content):
        if not isinstance(block, dict):
            continue
        source = block.get("source")
        if isinstance(source, dict) and source.get("type") == "url":
            raise _refuse(f"a {block.get('type', 'content')} block with a url source")
        if block.get("type") == "tool_result":
            _check_anthropic_blocks(block.get("content"))


def _check_openai(data: dict[str, Any]) -> None:
    for key, why in OPENAI_REFUSED_KEYS.items():
        if data.get(key):
            raise _refuse(f"`{key}` ({why})")
    _check_openai_tools(data.get("tools"))
    for item in _list(data.get("input")):
        if not isinstance(item, dict):
            continue
        _check_openai_content(item.get("content"))
        _check_openai_content(item.get("output"))  # a function call's output may hold images


def _check_openai_tools(tools: object) -> None:
    for tool in _list(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind not in OPENAI_CLIENT_TOOLS:
            raise _refuse(f"the hosted tool {kind!r}")
        if kind == "namespace":
            _check_openai_tools(tool.get("tools"))


def _check_openai_content(content: object) -> None:
    for part in _list(content):
        if not isinstance(part, dict):
            continue
        for field in ("image_url", "file_url"):
            url = part.get(field)
            if isinstance(url, dict):  # chat-style {"url": ...}
                url = url.get("url")
            if isinstance(url, str) and not url.startswith("data:"):
                raise _refuse(f"an {part.get('type', 'input')} given by URL")


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
