"""Which model credential each agent type needs, and which agent types in use have none.

One vocabulary for every place that says so (issue 27 #1): the start banner (bot/app.py), the
turn that fails at once instead of reaching a model without a key (`CredentialedRunner`), the
credential proxy's answer to a run whose agent type has no upstream (bot/proxy.py), and
`tribunal doctor`'s credentials line. Claude Code's own login (`/login`) is no way in: each
runner gets a HOME of its own (and a container no host file), so only these variables count.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.settings import Settings


@dataclass(frozen=True)
class Credential:
    agent: str
    key_variable: str  # e.g. ANTHROPIC_API_KEY
    url_variable: str  # a model server of one's own needs no key

    @property
    def how(self) -> str:
        return f"set {self.key_variable} (or {self.url_variable})"


CREDENTIALS = {
    "claude": Credential("claude", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "codex": Credential("codex", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
}


def has_credential(settings: Settings, agent: str) -> bool:
    if agent == "claude":
        return settings.anthropic_api_key is not None or bool(settings.anthropic_base_url)
    if agent == "codex":
        return settings.openai_api_key is not None or bool(settings.openai_base_url)
    return True  # the engine's `command` runner reaches no model


def missing_credentials(settings: Settings) -> dict[str, Credential]:
    """The agent types some group uses that have no credential, by name (sorted)."""
    return {
        agent: CREDENTIALS[agent]
        for agent in sorted(settings.agents_in_use())
        if agent in CREDENTIALS and not has_credential(settings, agent)
    }


def groups_using(settings: Settings, agent: str) -> list[str]:
    return [name for name, _, _, g in settings.all_groups() if agent in g.agents_in_use()]


def missing_line(settings: Settings, credential: Credential) -> str:
    """The start banner's line for one agent type without a credential."""
    groups = ", ".join(groups_using(settings, credential.agent))
    return (
        f"no model credential for {credential.agent} (groups: {groups}): its turns fail until "
        f"you {credential.how} in the environment, .env or tribunal.toml, and restart"
    )


def turn_refusal(credential: Credential) -> str:
    """The one line a turn that cannot reach its model fails with."""
    return f"no model credential for {credential.agent}: {credential.how}, then retry"
