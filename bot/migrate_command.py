"""`tribunal migrate [--check]`: bring the database's schema up to the code's, as a step of a
deployment (README "Running at scale"): the database is migrated once, before the new bot
processes start, instead of by whichever starts first. Every start checks the schema anyway (and
applies what is missing), so a one-host team never needs this.

`--check` changes nothing: exit 0 when the schema is the code's, 1 when it is behind (run
`tribunal migrate`) or ahead (this Tribunal is older than the database: upgrade it).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bot.settings import load_settings


def add_migrate_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "migrate", help="apply the missing schema migrations to the database (TRIBUNAL_DB)"
    )
    parser.add_argument(
        "--check", action="store_true", help="only say whether the schema is up to date"
    )
    parser.set_defaults(handler=_migrate)


def _migrate(args: argparse.Namespace) -> int:
    from rooms.store.postgres import redact

    settings = load_settings(args.config)
    target = settings.database
    return asyncio.run(migrate(target, check=args.check, shown=redact(target)))


async def migrate(target: str, *, check: bool, shown: str) -> int:
    from rooms.store import Store, StoreError
    from rooms.store.schema import LATEST

    try:
        before = await Store.schema_of(target) if _exists(target) else 0
    except StoreError as exc:
        print(f"tribunal migrate: {exc}", file=sys.stderr)
        return 1
    if before > LATEST:
        print(
            f"tribunal migrate: {shown} is at schema {before}, newer than this Tribunal"
            f" ({LATEST}): upgrade Tribunal, do not downgrade the database",
            file=sys.stderr,
        )
        return 1
    if before == LATEST:
        print(f"{shown}: schema {before}, up to date")
        return 0
    if check:
        print(f"{shown}: schema {before}, this Tribunal's is {LATEST}: run `tribunal migrate`")
        return 1
    try:
        store = await Store.open(target)  # applies each missing step in its own transaction
    except StoreError as exc:
        print(f"tribunal migrate: {exc}", file=sys.stderr)
        return 1
    try:
        after = await store.schema_version()
    finally:
        await store.close()
    print(f"{shown}: migrated from schema {before} to {after}")
    return 0


def _exists(target: str) -> bool:
    from pathlib import Path

    from rooms.store.postgres import is_postgres

    return is_postgres(target) or Path(target).exists()
