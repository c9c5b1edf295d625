"""`tribunal stats`: how the arbiter's rulings turned out (the outcome ledger, DESIGN §5), per
group and overall, as a table or (`--json`) the same export the dashboard reads
(rooms.core.ledger.ledger_summary(...).to_json()).

It reads the store of the settings (TRIBUNAL_DB: a SQLite file or a PostgreSQL URL, else
<data>/tribunal.db); a store that does not exist (or an empty database) is said so (exit 2),
never created.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from bot.settings import load_settings
from rooms.core.ledger import OVERALL, Ledger, ledger_summary, percent, seconds
from rooms.store import Store, StoreError
from rooms.store.postgres import is_postgres, redact

EXIT_USAGE = 2
_COLUMNS = (
    ("group", lambda t: t.group),
    ("rulings", lambda t: str(t.rulings)),
    ("pending", lambda t: str(t.pending)),
    ("borne out", lambda t: f"{t.borne_out} ({percent(t.share_borne_out)})"),
    ("not borne out", lambda t: str(t.not_borne_out)),
    ("upheld", lambda t: str(t.upheld)),
    ("overridden", lambda t: f"{t.overridden} ({percent(t.override_rate)})"),
    ("unanswered", lambda t: str(t.unanswered)),
    ("arbiter time", lambda t: seconds(t.mean_ruling_s)),
    ("people time", lambda t: seconds(t.mean_people_s)),
    ("sent back (complete)", lambda t: f"{t.sent_back} ({t.sent_back_complete})"),
    ("judge calls", lambda t: str(t.judge_calls)),
    ("judge cost", lambda t: f"${t.judge_cost_usd:.4f}"),
)


def add_stats_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("stats", help="how the arbiter's rulings turned out, per group")
    parser.add_argument("--group", default=None, help="only this group's rulings")
    parser.add_argument(
        "--days", type=float, default=None, help="only rulings of the last DAYS days"
    )
    parser.add_argument("--json", action="store_true", help="the ledger as one JSON object")
    parser.set_defaults(handler=_stats)


def table(ledger: Ledger) -> str:
    """The ledger as a plain text table: one row per group, the overall row last."""
    rows = [*ledger.groups, ledger.overall] if ledger.groups else [ledger.overall]
    cells = [[name for name, _ in _COLUMNS]] + [[cell(t) for _, cell in _COLUMNS] for t in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in cells
    )


def _stats(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    if args.days is not None and args.days <= 0:
        print("tribunal stats: --days must be more than 0", file=sys.stderr)
        return EXIT_USAGE
    target = settings.database  # the SQLite file or the PostgreSQL URL, as the bot uses it
    shown = redact(target)
    try:
        empty = not _exists(target) or asyncio.run(Store.schema_of(target)) == 0
    except StoreError as exc:
        print(f"tribunal stats: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if empty:
        print(f"tribunal stats: no store at {shown} (nothing has been ruled yet)", file=sys.stderr)
        return EXIT_USAGE
    since = time.time() - args.days * 86400 if args.days is not None else 0.0
    try:
        ledger = asyncio.run(_read(target, args.group, since))
    except StoreError as exc:
        print(f"tribunal stats: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(_export(ledger, args.group, since), indent=2))
    else:
        print(table(ledger))
    return 0


async def _read(path: str, group: str | None, since: float) -> Ledger:
    store = await Store.open(path)
    try:
        return await ledger_summary(store, group=group, since=since)
    finally:
        await store.close()


def _exists(target: str) -> bool:
    return is_postgres(target) or Path(target).exists()


def _export(ledger: Ledger, group: str | None, since: float) -> dict[str, Any]:
    return {"group": group or OVERALL, "since": since, **ledger.to_json()}
