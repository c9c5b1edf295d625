"""The reference opinions of a group (mixture of agents, DESIGN §5) in the settings.

    [groups.core]
    reference_deadline_s = 90      # the whole fan-out; a reference still out then is dropped
    allow_private_urls = false     # true only for references on the local network (and tests)

    [[groups.core.references]]
    name = "second-opinion"        # for people and the records; never shown to the arbiter
    api = "anthropic"              # anthropic | openai-chat | openai-responses
    base_url = "https://api.anthropic.com"
    model = "claude-…"
    key_env = "REFERENCE_ANTHROPIC_KEY"   # the variable holding its key (read from the host)
    max_tokens = 1500
    timeout_s = 60
    usd_per_mtok_in = 3.0          # prices per million tokens, for the cost in status/records
    usd_per_mtok_out = 15.0

Base URLs are checked when the settings load (bot/references/urls.py), so a bad one stops the
bot at start-up with exit 78 and `tribunal doctor` names it; unless the group allows private
URLs, the addresses a host name resolves to are checked again at each connection
(bot/references/network.py), and a refused one drops that reference from the ruling.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.adapter import platform_secrets, platform_specs
from rooms.references.port import REFERENCE_APIS

ReferenceAPI = Literal["anthropic", "openai-chat", "openai-responses"]
assert set(REFERENCE_APIS) == set(ReferenceAPI.__args__)  # type: ignore[attr-defined]
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables that are never a model's key: the bot's own settings, the container engine's, and
# every chat platform's (by the prefix of its name, and each secret it declares: bot/adapter.py).
_NOT_MODEL_KEYS = ("TRIBUNAL_", "DOCKER_")


def _not_a_model_key(variable: str) -> bool:
    upper = variable.upper()
    chats = [spec for spec in platform_specs() if spec.token is not None]
    prefixes = (*_NOT_MODEL_KEYS, *(f"{spec.name.upper()}_" for spec in chats))
    return upper.startswith(prefixes) or upper in platform_secrets()


_REFERENCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ReferenceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # as every section's

    name: str
    api: ReferenceAPI
    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    key_env: str
    max_tokens: int = Field(1500, ge=1, le=64_000)
    timeout_s: float = Field(60.0, gt=0, le=600)
    max_retries: int = Field(1, ge=0, le=5)  # the SDK's own retries, within timeout_s
    # Prices, for the cost shown in `status` and the records (0: not counted).
    usd_per_mtok_in: float = Field(0.0, ge=0)
    usd_per_mtok_out: float = Field(0.0, ge=0)

    @field_validator("name")
    @classmethod
    def _name_is_short(cls, value: str) -> str:
        if not _REFERENCE_NAME.match(value):
            raise ValueError(f"use 1 to 64 letters, digits, '_', '-' or '.' (got {value!r})")
        return value

    @field_validator("key_env")
    @classmethod
    def _key_env_is_a_variable(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError(
                f"the name of an environment variable, not the key itself (got {len(value)} "
                "characters that are not a variable name)"
            )
        if _not_a_model_key(value):
            # The key is sent to the reference's base URL: never a chat platform's token.
            raise ValueError(f"{value} is not a model API key: use a variable of its own")
        return value
