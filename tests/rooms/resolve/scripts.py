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


def results(**outcomes: str) -> dict[str, Any]:
    return {
        "results": [
            {"test": t, "outcome": o, "detail": f"exit {0 if o == 'PASS' else 1}"}
            for t, o in outcomes.items()
        ]
    }
