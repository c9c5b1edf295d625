"""Scripted resolve actors: the structured objects resolve's runs return."""

from __future__ import annotations

from typing import Any


def positions(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"positions": [{"id": i, "approach": a, "rationale": f"why {i}"} for i, a in pairs]}


TWO = positions(("A", "parse() drops the trailing newline"), ("B", "parse() keeps it"))


def test(tid: str, command: str = "", **predicted: str) -> dict[str, Any]:
    return {
        "id": tid,
        "name": f"test_{tid.lower()}",
        "claim": "the trailing newline",
        "command": command or f"python -m pytest -q /tmp/{tid.lower()}.py",
        "predictions": [{"position": p, "outcome": o} for p, o in predicted.items()],
    }


def design(*tests: dict[str, Any], talk: str = "") -> dict[str, Any]:
    return {"tests": list(tests), "talk": talk}


def ran(**endings: int | str) -> dict[str, Any]:
    """What the command runner reports (runners.protocol.CheckReport) for checks that ended so:
    an exit status, "timeout" or "signal". For the machine's own tests; the engine's tests get
    theirs from the real runner."""
    checks = []
    for tid, ending in endings.items():
        result: dict[str, Any] = {"id": tid, "output_tail": f"{tid} said {ending}\n"}
        if ending == "timeout":
            result.update(timed_out=True, signalled=True, signal=9, duration_s=120.0)
        elif ending == "signal":
            result.update(signalled=True, signal=11)
        else:
            result["exit_status"] = ending
        checks.append(result)
    return {"checks": checks}
