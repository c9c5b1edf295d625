"""The references on the official SDKs (DESIGN §5): Anthropic Messages, and OpenAI-compatible
Chat Completions or Responses. Each is a `rooms.references.port.Reference`, called from the host
with the arbiter's context only (no tools, no workspace).

The key is read from the reference's own variable (`key_env`) when it is asked, never logged and
never put in an error: a failure becomes `ReferenceFailed` with the status and the API's own
message, which the record keeps.

Unless the group allows private URLs, each client connects through `network.CheckedNetwork`: the
address check of the settings made again at every connection, on the addresses actually used.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic
import anthropic.resources.messages
import openai

# The SDKs import their API modules on first use, which takes seconds on a busy host: a cost
# paid here, at start-up, and not inside the first reference's timeout.
import openai.resources.chat
import openai.resources.responses

from bot.references.network import CheckedNetwork, checked_http_client, refusal
from bot.settings_references import ReferenceSettings
from rooms.references.port import Answer, Reference, ReferenceFailed

CONNECT_TIMEOUT_S = 5.0


@dataclass
class SDKReference:
    settings: ReferenceSettings
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    # None only for a group with allow_private_urls = true: the SDK's own HTTP client.
    network: CheckedNetwork | None = field(default_factory=CheckedNetwork)
    _client: Any = None

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def timeout_s(self) -> float:
        return self.settings.timeout_s

    def _key(self) -> str:
        key = self.environ.get(self.settings.key_env, "")
        if not key:
            raise ReferenceFailed(f"its key variable {self.settings.key_env} is not set")
        return key

    def _cost(self, tokens_in: int, tokens_out: int) -> float:
        s = self.settings
        return (tokens_in * s.usd_per_mtok_in + tokens_out * s.usd_per_mtok_out) / 1_000_000

    async def ask(self, prompt: str, *, timeout: float) -> Answer:
        try:
            text, tokens_in, tokens_out = await self._call(prompt, timeout)
        except (anthropic.APIStatusError, openai.APIStatusError) as exc:
            raise ReferenceFailed(f"HTTP {exc.status_code}: {_api_message(exc)}") from None
        except (anthropic.APITimeoutError, openai.APITimeoutError):
            raise ReferenceFailed(f"timed out after {timeout:g} s") from None
        except (anthropic.APIConnectionError, openai.APIConnectionError) as exc:
            refused = refusal(exc)
            if refused is not None:
                raise ReferenceFailed(
                    f"refused: {refused}; references are called from the bot's host, so such "
                    "addresses are refused unless the group sets allow_private_urls = true"
                ) from None
            raise ReferenceFailed(f"cannot connect: {type(exc).__name__}") from None
        return Answer(text, tokens_in, tokens_out, self._cost(tokens_in, tokens_out))

    async def _call(self, prompt: str, timeout: float) -> tuple[str, int, int]:
        raise NotImplementedError

    def _http_client(self, sdk: Literal["anthropic", "openai"]) -> Any:
        """The checked client, or None (the SDK builds its own) when private URLs are allowed."""
        return None if self.network is None else checked_http_client(sdk, self.network)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class AnthropicReference(SDKReference):
    async def _call(self, prompt: str, timeout: float) -> tuple[str, int, int]:
        if self._client is None:
            self._client = anthropic.AsyncAnthropic(
                api_key=self._key(),
                base_url=self.settings.base_url,
                max_retries=self.settings.max_retries,
                http_client=self._http_client("anthropic"),
            )
        message = await self._client.messages.create(
            model=self.settings.model,
            max_tokens=self.settings.max_tokens,
            messages=[{"role": "user", "content": prompt}],
            timeout=anthropic.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout)),
        )
        text = "\n".join(b.text for b in message.content if b.type == "text")
        return text, message.usage.input_tokens, message.usage.output_tokens


class _OpenAIReference(SDKReference):
    def _openai(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                api_key=self._key(),
                base_url=self.settings.base_url,
                max_retries=self.settings.max_retries,
                http_client=self._http_client("openai"),
            )
        client: openai.AsyncOpenAI = self._client
        return client


class ChatReference(_OpenAIReference):
    async def _call(self, prompt: str, timeout: float) -> tuple[str, int, int]:
        completion = await self._openai().chat.completions.create(
            model=self.settings.model,
            max_tokens=self.settings.max_tokens,
            messages=[{"role": "user", "content": prompt}],
            timeout=openai.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout)),
        )
        text = completion.choices[0].message.content or "" if completion.choices else ""
        usage = completion.usage
        return text, usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0


class ResponsesReference(_OpenAIReference):
    async def _call(self, prompt: str, timeout: float) -> tuple[str, int, int]:
        response = await self._openai().responses.create(
            model=self.settings.model,
            max_output_tokens=self.settings.max_tokens,
            input=prompt,
            store=False,
            timeout=openai.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout)),
        )
        usage = response.usage
        return (
            response.output_text,
            usage.input_tokens if usage else 0,
            usage.output_tokens if usage else 0,
        )


_BY_API: dict[str, type[SDKReference]] = {
    "anthropic": AnthropicReference,
    "openai-chat": ChatReference,
    "openai-responses": ResponsesReference,
}


def make_reference(
    settings: ReferenceSettings,
    environ: Mapping[str, str] | None = None,
    *,
    allow_private: bool = False,
    network: CheckedNetwork | None = None,
) -> SDKReference:
    """The reference for `settings`; its connections are checked (through `network`, or one on
    the system resolver) unless its group allows private URLs."""
    checked = None if allow_private else (network or CheckedNetwork())
    env = environ if environ is not None else os.environ
    return _BY_API[settings.api](settings, env, checked)


def _api_message(exc: anthropic.APIStatusError | openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        # anthropic keeps the whole body ({"error": {...}}); openai keeps the error object.
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return " ".join(str(error["message"]).split())[:200]
    return type(exc).__name__


class SettingsReferences:
    """rooms.references.port.ReferencePool from the settings: each group's references, built
    once, checked at connect time unless the group is in `private_ok` (allow_private_urls);
    `close` closes their HTTP clients."""

    def __init__(
        self,
        groups: Mapping[str, Sequence[ReferenceSettings]],
        *,
        private_ok: Collection[str] = (),
        network: CheckedNetwork | None = None,
    ) -> None:
        self._by_group: dict[str, list[SDKReference]] = {
            name: [
                make_reference(r, allow_private=name in private_ok, network=network) for r in refs
            ]
            for name, refs in groups.items()
        }

    def for_group(self, group: str) -> Sequence[Reference]:
        return self._by_group.get(group, [])

    async def close(self) -> None:
        for refs in self._by_group.values():
            for ref in refs:
                await ref.close()
