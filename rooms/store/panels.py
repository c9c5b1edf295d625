"""The reference opinions part of the store: one panel (fan-out) per arbitration and its
references, written as soon as the fan-out ends, so a failure is recorded even if the arbiter's
turn never finishes, and a ruling sent back (or a turn run again after a crash) reads the same
panel instead of asking the references again."""

from __future__ import annotations

import sqlite3

from rooms.references.panel import Opinion, Panel
from rooms.store.connection import StoreBase


class PanelStore(StoreBase):
    async def save_panel(
        self, task_id: int, turn_id: int | None, panel: Panel, deadline_s: float, now: float
    ) -> int:
        """Store a fan-out; its tokens and cost count toward the task's budgets."""

        def write(db: sqlite3.Connection) -> int:
            cursor = db.execute(  # RETURNING, not lastrowid: PostgreSQL has no lastrowid
                "INSERT INTO panels (task_id, turn_id, seed, deadline_s, wall_s, at)"
                " VALUES (?,?,?,?,?,?) RETURNING id",
                (task_id, turn_id, panel.seed, deadline_s, panel.wall_s, now),
            )
            panel_id = int(cursor.fetchone()[0])
            db.executemany(
                'INSERT INTO "references" (panel_id, position, label, name, model, text,'
                " verdict, error, input_tokens, output_tokens, cost_usd, latency_s)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        panel_id,
                        o.position,
                        o.label,
                        o.name,
                        o.model,
                        o.text,
                        o.verdict,
                        o.error,
                        o.input_tokens,
                        o.output_tokens,
                        o.cost_usd,
                        o.latency_s,
                    )
                    for o in panel.opinions
                ],
            )
            tokens = sum(o.input_tokens + o.output_tokens for o in panel.opinions)
            cost = sum(o.cost_usd for o in panel.opinions)
            db.execute(
                "UPDATE tasks SET tokens = tokens + ?, cost_usd = cost_usd + ? WHERE id=?",
                (tokens, cost, task_id),
            )
            return panel_id

        return await self._transact(write)

    async def pending_panel(self, task_id: int) -> tuple[int, int | None, Panel] | None:
        """The task's latest panel (id, the turn that asked, the panel) when no ruling has used
        it yet: the arbitration under way, or one a crash or a send-back interrupted."""
        rows = await self._rows(
            "SELECT p.id, p.turn_id FROM panels p WHERE p.task_id=?"
            " AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.panel_id = p.id)"
            " AND p.id = (SELECT MAX(id) FROM panels WHERE task_id=?)",
            (task_id, task_id),
        )
        if not rows:
            return None
        panel = await self.panel(int(rows[0]["id"]))
        if panel is None:
            return None
        return int(rows[0]["id"]), rows[0]["turn_id"], panel

    async def latest_panel(self, task_id: int) -> Panel | None:
        rows = await self._rows("SELECT MAX(id) AS id FROM panels WHERE task_id=?", (task_id,))
        return await self.panel(int(rows[0]["id"])) if rows and rows[0]["id"] else None

    async def panel(self, panel_id: int) -> Panel | None:
        head = await self._rows("SELECT * FROM panels WHERE id=?", (panel_id,))
        if not head:
            return None
        rows = await self._rows(
            'SELECT * FROM "references" WHERE panel_id=? ORDER BY position', (panel_id,)
        )
        opinions = tuple(
            Opinion(
                position=r["position"],
                label=r["label"],
                name=r["name"],
                model=r["model"],
                text=r["text"],
                verdict=r["verdict"],
                error=r["error"],
                input_tokens=r["input_tokens"],
                output_tokens=r["output_tokens"],
                cost_usd=r["cost_usd"],
                latency_s=r["latency_s"],
            )
            for r in rows
        )
        return Panel(int(head[0]["seed"]), opinions, float(head[0]["wall_s"]))
