"""Approvers named by a platform group (a Discord role id): `may_answer` reads the roles the
platform reported on the event (`Inbound.roles`), never anything in the text."""

from __future__ import annotations

import pytest

from rooms.base.model import GroupPolicy
from rooms.core.escalations import may_answer

POLICY = GroupPolicy(name="g", approvers=frozenset({"U1", "R9"}))


@pytest.mark.parametrize(
    ("user", "roles", "allowed"),
    [
        ("U1", frozenset(), True),  # by name
        ("U2", frozenset({"R9"}), True),  # by role
        ("U2", frozenset({"R8"}), False),
        ("U2", frozenset(), False),
        ("R9", frozenset(), True),  # ids are distinct across users and roles on Discord
    ],
)
def test_may_answer(user: str, roles: frozenset[str], allowed: bool) -> None:
    assert may_answer(POLICY, user, roles) is allowed


def test_nobody_may_answer_without_approvers() -> None:
    assert not may_answer(GroupPolicy(name="g"), "U1", frozenset({"R9"}))
