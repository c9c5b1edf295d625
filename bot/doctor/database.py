"""`tribunal doctor`'s line for a PostgreSQL database (TRIBUNAL_DB=postgresql://…): reachable,
its schema against the code's (read, never migrated: doctor changes nothing), and LISTEN/NOTIFY
delivering (the engines' wake-ups, rooms/store/listen.py)."""

from __future__ import annotations

import asyncio

from bot.doctor.check import Check


def check_postgres(url: str) -> Check:
    from rooms.store.postgres import redact

    shown = redact(url)
    try:
        return asyncio.run(_check(url, shown))
    except Exception as exc:  # any failure to reach it is the answer this check gives
        return Check("database", False, f"{shown} does not answer: {exc}")


async def _check(url: str, shown: str) -> Check:
    from rooms.store import Store
    from rooms.store.listen import listens
    from rooms.store.schema import LATEST

    version = await Store.schema_of(url)
    if version > LATEST:
        return Check(
            "database",
            False,
            f"{shown} is at schema {version}, newer than this Tribunal ({LATEST}): upgrade it",
        )
    try:
        await listens(url)
    except Exception as exc:
        return Check("database", False, f"{shown}: LISTEN/NOTIFY does not work: {exc!r}")
    if version < LATEST:
        return Check(
            "database",
            True,
            f"ok ({shown}, schema {version} of {LATEST}: migrated at the first start, or run"
            " `tribunal migrate`; LISTEN/NOTIFY works)",
        )
    return Check("database", True, f"ok ({shown}, schema {version}, LISTEN/NOTIFY works)")
