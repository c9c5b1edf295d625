"""Role prompts as Markdown files, loaded with importlib.resources and overridable per group.

One file per role, `<role>.md`; which roles there are is the protocols' to say (each declares
its prompt roles in rooms.core.registry.ProtocolSpec; a deliberation's are `<protocol>-<actor>`).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path


class PromptError(ValueError):
    """A prompt that does not exist or cannot be read."""


def load_prompt(role: str, overrides: dict[str, str] | None = None) -> str:
    """The system prompt for `role`: the group's override file when one is set, else ours."""
    override = (overrides or {}).get(role)
    if override:
        try:
            return Path(override).read_text(encoding="utf-8")
        except OSError as exc:
            raise PromptError(f"prompt override for {role} ({override}): {exc.strerror}") from exc
    return _ours(role)


@cache
def _ours(role: str) -> str:
    """Our prompt for `role`, read once per process: the files ship inside this package and
    change only with it, like its code (which is also read once). Every turn asks for one, and
    finding the package's files and reading one cost more than the rest of the turn's prompt.
    An override is read on every turn instead: it is the operator's file, edited while we run.
    A role without a file raises, and a raised call is not cached."""
    try:
        return resources.files(__package__).joinpath(f"{role}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"no prompt for role {role!r}") from None
