"""One line of `tribunal doctor` (bot/doctor): what was checked, whether it passed, and what to
do when it did not."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    text: str  # "ok (…)" when ok, else what to do
    required: bool = True

    @property
    def line(self) -> str:
        return f"{self.name}: {self.text}"
