"""A turn's final answer is the model's: the runner's `final` checked against what the credential
proxy relayed (container/proxy/answers.py).

The agent's tools run as the same user as its CLI, so code in the workspace can write a fake
final answer into the CLI's output (/proc/<cli pid>/fd/1) or kill the runner after one; the
runner cannot tell. The proxy can: it relays every model answer of the turn's run token. So a
`final` that ProxiedRunner passes on must be the model's newest answer, and it is passed on as
the proxy read it, the runner's copy only compared:

- the newest model request of the turn must have a complete answer that calls no tool (a final
  while the model is still working, or after an answer that asked for a tool, is not the
  model's final word); an answer too long to keep whole cannot be checked, and fails;
- text: the runner's text and the answer's text must be equal once leading and trailing
  whitespace is trimmed on both (the one normalisation a runner may do; Claude Code's `result`
  is the answer's last text block, a Codex final the last message item's text, see answers.py);
- structured output: when the answer is a `StructuredOutput` call (Claude Code), the runner's
  text must be that object's JSON and its `structured` that object (a non-object wrapped as
  `{"value": …}`, as runners/claude_events.py does); when the runner parsed the text as JSON
  (Codex), that object must be the answer's text parsed the same way. A runner that gives no
  `structured` gets none (the engine falls back to the text, as it would have).

Anything else fails the turn with an `error` of code `unverified` ("final answer not seen from
the model"): never an approval, whatever the text said. A turn with no grant (the engine's
`command` checks) is not checked: it asks no model, and its final is the command runner's
report, not a verdict.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from container.proxy.answers import Answer
from runners.protocol import UNVERIFIED, RunEvent, error

log = logging.getLogger(__name__)

NOT_FROM_MODEL = "final answer not seen from the model"


def checked_final(final: RunEvent, answer: Answer | None, label: str = "") -> RunEvent:
    """The final to pass on (the model's answer as the proxy read it), or an `unverified`
    error saying why the runner's final is not it."""
    why = _mismatch(final, answer)
    if why is not None:
        log.warning("proxy: %s: %s: %s", label or "a turn", NOT_FROM_MODEL, why)
        return error(UNVERIFIED, f"{NOT_FROM_MODEL}: {why}; the turn's answer is not used")
    assert answer is not None
    if answer.structured is not None:
        text = json.dumps(answer.structured, ensure_ascii=False, separators=(",", ":"))
        return RunEvent(kind="final", text=text, structured=_as_object(answer.structured))
    text = answer.text or ""
    structured = _parsed(text) if final.structured is not None else None
    return RunEvent(kind="final", text=text, structured=structured)


def _mismatch(final: RunEvent, answer: Answer | None) -> str | None:
    if answer is None:
        return "the model has no complete answer to the turn's last request"
    if not answer.whole:
        return "the model's last answer could not be read whole (too long, or it failed)"
    if answer.calls_tools:
        return "the model's last answer asked for a tool; it was not a final answer"
    if answer.structured is not None:
        if _parsed_any(final.text) != answer.structured:
            return "the runner's text is not the object the model answered"
        if final.structured is not None and final.structured != _as_object(answer.structured):
            return "the runner's structured output is not the object the model answered"
        return None
    if final.text.strip() != (answer.text or "").strip():
        return "the runner's text is not the model's last answer as the credential proxy saw it"
    if final.structured is not None and final.structured != _parsed(answer.text or ""):
        return "the runner's structured output is not the model's last answer"
    return None


_NOT_JSON = object()


def _parsed_any(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _parsed(text: str) -> dict[str, Any] | None:
    value = _parsed_any(text)
    return value if isinstance(value, dict) else None


def _as_object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"value": value}
