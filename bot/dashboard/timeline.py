"""A task's timeline for its page: turns, detector firings, rulings, questions and people's
messages in the order they happened, each as a plain item the template shows (escaped). Also
what the task's work is (branch, base, diffstat) and its decision records, read from disk only
inside the records folder."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from rooms.store import Store

RECORD_LIMIT = 200_000  # characters of a decision record shown
GIT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Item:
    at: float
    kind: str  # turn, firing, ruling, question, message
    title: str
    body: str = ""
    folded: str = ""  # the long part (a turn's full output), shown folded
    details: list[tuple[str, str]] = field(default_factory=list)


async def timeline(store: Store, task_id: int) -> list[Item]:
    turns = await store.turns(task_id)
    firings = await store.firings(task_id)
    verdicts = await store.verdicts(task_id)
    questions = await store.escalations(task_id)
    messages = await store.messages(task_id)
    items: list[Item] = []
    for t in turns:
        marker = f" · {t.marker}" if t.marker else ""
        error = f" · {t.error}" if t.error else ""
        items.append(
            Item(
                t.started_at,
                "turn",
                f"#{t.seq} {t.role} · {t.status}{marker}{error}",
                folded=t.output,
            )
        )
    for f in firings:
        acted = "" if f.acted else " (noted, not acted on)"
        items.append(Item(f.at, "firing", f"detector {f.firing.detector}{acted}", f.firing.reason))
    for v in verdicts:
        ruling = v.ruling
        details = [("reasons", ruling.reasons)]
        if ruling.conditions:
            details.append(("conditions", "\n".join(ruling.conditions)))
        if ruling.dissent:
            details.append(("dissent", ruling.dissent))
        if v.tally:
            details.append(("reference tally", ", ".join(f"{k}: {n}" for k, n in v.tally.items())))
        if v.fairness:
            details.append(("fairness", ", ".join(f"{k}: {n}" for k, n in v.fairness.items())))
        items.append(Item(v.at, "ruling", f"ruling {ruling.verdict}", details=details))
    for q in questions:
        answered = (
            f"answered by {q.answered_by}: {q.answer}" if q.status == "answered" else q.status
        )
        options = [("options", "\n".join(f"{n}. {o}" for n, o in enumerate(q.options, 1)))]
        items.append(
            Item(
                q.created_at,
                "question",
                f"question ({q.kind}) · {answered}",
                q.question,
                details=[("reason", q.reason), *(options if q.options else [])],
            )
        )
    for m in messages:
        items.append(Item(m.at, "message", f"{m.user} ({m.kind})", m.text))
    return sorted(items, key=lambda i: i.at)


def record_text(records_dir: Path, path: str | None) -> str | None:
    """A decision record's Markdown, when its path is inside the records folder."""
    if not path:
        return None
    with contextlib.suppress(OSError, ValueError):
        target = Path(path).resolve()
        if target.is_relative_to(records_dir.resolve()) and target.is_file():
            return target.read_text(encoding="utf-8", errors="replace")[:RECORD_LIMIT]
    return None


async def diffstat(repository: str, base: str, branch: str) -> str:
    """`git diff --stat base...branch` in the task's repository ("" when git cannot say)."""
    with contextlib.suppress(OSError, TimeoutError):
        process = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            repository,
            "diff",
            "--stat",
            "--no-color",
            f"{base}...{branch}",
            "--",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            out, _ = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            raise
        if process.returncode == 0:
            return out.decode("utf-8", errors="replace")
    return ""
