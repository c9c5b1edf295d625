"""The schema of the store (DESIGN §8) as an ordered list of migrations, in portable SQL with
SQLite's type names: migrate.py applies them, translated for PostgreSQL.

`PRAGMA user_version` holds the number of steps applied; opening a store applies the missing ones,
each in its own transaction, with foreign keys off (a step may rebuild a table, SQLite's way of
changing a constraint) and `PRAGMA foreign_key_check` before it commits. Never edit a step that
has shipped: append a new one.
"""

from __future__ import annotations

# The pair's open statuses as version 1 listed them in a CHECK; version 3 drops the CHECK, since
# every protocol has statuses of its own and the code checks them against its table.
_OPEN = "'owner_turn','review_turn','arbitration','waiting_human','finalize'"

_TASK_COLUMNS = (
    "id, room, group_name, text, opened_by, status, version, rounds, arbitrations, turns,"
    " failures, grants, tokens, cost_usd, lease_owner, lease_until, created_at, updated_at,"
    " closed_at"
)

# One step = a list of statements run in one transaction.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE groups (
            name TEXT PRIMARY KEY,
            created_at REAL NOT NULL
        )""",
        """CREATE TABLE rooms (
            key TEXT PRIMARY KEY,
            platform TEXT NOT NULL,
            channel TEXT NOT NULL,
            thread TEXT NOT NULL,
            group_name TEXT NOT NULL REFERENCES groups(name),
            created_at REAL NOT NULL
        )""",
        f"""CREATE TABLE tasks (
            id INTEGER PRIMARY KEY,
            room TEXT NOT NULL REFERENCES rooms(key),
            group_name TEXT NOT NULL REFERENCES groups(name),
            text TEXT NOT NULL,
            opened_by TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL CHECK (status IN ({_OPEN},'closed')),
            version INTEGER NOT NULL DEFAULT 0,
            rounds INTEGER NOT NULL DEFAULT 0,
            arbitrations INTEGER NOT NULL DEFAULT 0,
            turns INTEGER NOT NULL DEFAULT 0,
            failures INTEGER NOT NULL DEFAULT 0,
            grants INTEGER NOT NULL DEFAULT 0,
            tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            lease_owner TEXT,
            lease_until REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            closed_at REAL
        )""",
        # DESIGN §2: at most one open task per room, enforced by the database itself.
        "CREATE UNIQUE INDEX tasks_one_open_per_room ON tasks(room) WHERE status != 'closed'",
        "CREATE INDEX tasks_open ON tasks(status) WHERE status != 'closed'",
        """CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            phase TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running','done','failed','interrupted')),
            output TEXT NOT NULL DEFAULT '',
            structured TEXT,
            marker TEXT,
            unmarked INTEGER NOT NULL DEFAULT 0,
            error_code TEXT,
            error TEXT,
            tree_before TEXT,
            tree TEXT,
            session_id TEXT,
            resumed_from TEXT,
            engine_id TEXT,
            started_at REAL NOT NULL,
            ended_at REAL,
            UNIQUE (task_id, seq)
        )""",
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            user TEXT NOT NULL,
            text TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'message' CHECK (kind IN ('message','answer')),
            before_seq INTEGER NOT NULL,
            event_id TEXT,
            at REAL NOT NULL
        )""",
        "CREATE INDEX messages_task ON messages(task_id, id)",
        """CREATE TABLE firings (
            id INTEGER PRIMARY KEY,
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            turn_id INTEGER REFERENCES turns(id),
            detector TEXT NOT NULL,
            reason TEXT NOT NULL,
            fingerprint TEXT,
            extra TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(extra)),
            acted INTEGER NOT NULL DEFAULT 1,
            at REAL NOT NULL
        )""",
        "CREATE INDEX firings_task ON firings(task_id, id)",
        """CREATE TABLE verdicts (
            id INTEGER PRIMARY KEY,
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            turn_id INTEGER NOT NULL UNIQUE REFERENCES turns(id),
            firing_id INTEGER REFERENCES firings(id),
            verdict TEXT NOT NULL CHECK (verdict IN ('PROCEED','REVISE','RESET','ESCALATE')),
            ruling TEXT NOT NULL CHECK (json_valid(ruling)),
            readable INTEGER NOT NULL DEFAULT 1,
            record_path TEXT,
            at REAL NOT NULL
        )""",
        # Reference opinions (mixture of agents, DESIGN §5): schema only for now.
        """CREATE TABLE "references" (
            id INTEGER PRIMARY KEY,
            verdict_id INTEGER NOT NULL REFERENCES verdicts(id),
            label TEXT NOT NULL,
            model TEXT NOT NULL,
            text TEXT NOT NULL DEFAULT '',
            verdict TEXT,
            error TEXT,
            seed INTEGER,
            latency_s REAL,
            at REAL NOT NULL
        )""",
        """CREATE TABLE escalations (
            id INTEGER PRIMARY KEY,
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            kind TEXT NOT NULL,
            question TEXT NOT NULL,
            options TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(options)),
            reason TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open','answered','closed')),
            answer TEXT,
            answered_by TEXT,
            created_at REAL NOT NULL,
            answered_at REAL
        )""",
        "CREATE UNIQUE INDEX escalations_one_open ON escalations(task_id) WHERE status = 'open'",
        """CREATE TABLE events (
            event_id TEXT PRIMARY KEY,
            at REAL NOT NULL
        )""",
        """CREATE TABLE outbox (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            task_id INTEGER REFERENCES tasks(id),
            room TEXT NOT NULL REFERENCES rooms(key),
            text TEXT NOT NULL,
            persona TEXT NOT NULL DEFAULT 'tribunal',
            actions TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(actions)),
            status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','sent','dead')),
            message_id TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_try_at REAL NOT NULL DEFAULT 0,
            claimed_by TEXT,
            claimed_until REAL,
            created_at REAL NOT NULL,
            sent_at REAL
        )""",
        "CREATE INDEX outbox_pending ON outbox(id) WHERE status = 'pending'",
        """CREATE TABLE usage (
            id INTEGER PRIMARY KEY,
            turn_id INTEGER NOT NULL UNIQUE REFERENCES turns(id),
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            at REAL NOT NULL
        )""",
    ],
    [
        # 2: the structured card (Card.to_json) of a ruling or escalation post, for Slack/Discord.
        "ALTER TABLE outbox ADD COLUMN card TEXT CHECK (card IS NULL OR json_valid(card))",
        # A reply for one person (refusals, stale clicks) and the inbound event it answers.
        "ALTER TABLE outbox ADD COLUMN private_to TEXT",
        "ALTER TABLE outbox ADD COLUMN in_reply_to TEXT",
    ],
    [
        # 3: every task records its protocol (rooms.core.registry; the tasks before it are the
        # owner/reviewer pair's), and its status is any of its protocol's (no CHECK listing the
        # pair's): the table is rebuilt, the documented way to drop a constraint in SQLite.
        """CREATE TABLE tasks_v3 (
            id INTEGER PRIMARY KEY,
            room TEXT NOT NULL REFERENCES rooms(key),
            group_name TEXT NOT NULL REFERENCES groups(name),
            text TEXT NOT NULL,
            opened_by TEXT NOT NULL DEFAULT '',
            protocol TEXT NOT NULL DEFAULT 'pair',
            status TEXT NOT NULL CHECK (status != ''),
            version INTEGER NOT NULL DEFAULT 0,
            rounds INTEGER NOT NULL DEFAULT 0,
            arbitrations INTEGER NOT NULL DEFAULT 0,
            turns INTEGER NOT NULL DEFAULT 0,
            failures INTEGER NOT NULL DEFAULT 0,
            grants INTEGER NOT NULL DEFAULT 0,
            tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            lease_owner TEXT,
            lease_until REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            closed_at REAL
        )""",
        f"INSERT INTO tasks_v3 ({_TASK_COLUMNS}) SELECT {_TASK_COLUMNS} FROM tasks",
        "DROP TABLE tasks",
        "ALTER TABLE tasks_v3 RENAME TO tasks",
        "CREATE UNIQUE INDEX tasks_one_open_per_room ON tasks(room) WHERE status != 'closed'",
        "CREATE INDEX tasks_open ON tasks(status) WHERE status != 'closed'",
    ],
    [
        # 4: a person's pending `arbitrate` request (model.Summon as JSON), cleared when a ruling
        # answers it or the task waits for a person or closes.
        "ALTER TABLE tasks ADD COLUMN summon TEXT CHECK (summon IS NULL OR json_valid(summon))",
    ],
    [
        # 5: reference opinions (rooms/references). The "references" table of step 1 was schema
        # only and never written; it is made again in the shape the fan-out records: one panel
        # (fan-out) per arbitration with its seed, one row per reference asked, answered or not.
        'DROP TABLE "references"',
        """CREATE TABLE panels (
            id INTEGER PRIMARY KEY,
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            turn_id INTEGER REFERENCES turns(id),
            seed INTEGER NOT NULL,
            deadline_s REAL NOT NULL,
            wall_s REAL NOT NULL,
            at REAL NOT NULL
        )""",
        "CREATE INDEX panels_task ON panels(task_id, id)",
        """CREATE TABLE "references" (
            id INTEGER PRIMARY KEY,
            panel_id INTEGER NOT NULL REFERENCES panels(id),
            position INTEGER NOT NULL,
            label TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            model TEXT NOT NULL,
            text TEXT NOT NULL DEFAULT '',
            verdict TEXT,
            error TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            latency_s REAL NOT NULL DEFAULT 0,
            UNIQUE (panel_id, position)
        )""",
        # The panel a ruling read, its tally, and how the sides were seated (fair input).
        "ALTER TABLE verdicts ADD COLUMN panel_id INTEGER REFERENCES panels(id)",
        "ALTER TABLE verdicts ADD COLUMN tally TEXT CHECK (tally IS NULL OR json_valid(tally))",
        "ALTER TABLE verdicts ADD COLUMN fairness TEXT"
        " CHECK (fairness IS NULL OR json_valid(fairness))",
    ],
    [
        # 6: the git tree the reviewer approved (rooms/work/snapshots.py): the wrap-up is compared
        # with it and exactly it is committed.
        "ALTER TABLE tasks ADD COLUMN approved_tree TEXT",
        # and the worktree and branch this bot made for a task (rooms/work/worktrees.py). A task
        # resumes only the branch recorded here; `wanted` is the name it would have had, when
        # a branch or folder of that name existed already and `name` had to be another.
        """CREATE TABLE worktrees (
            task_id INTEGER PRIMARY KEY REFERENCES tasks(id),
            name TEXT NOT NULL,
            wanted TEXT NOT NULL,
            branch TEXT NOT NULL,
            base TEXT NOT NULL,
            repository TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
    ],
    [
        # 7: the chat message that shows a turn's progress, until it has been edited to say how
        # the turn ended (rooms/store/progress_rows.py): a crash leaves none saying "working".
        "ALTER TABLE turns ADD COLUMN progress_message TEXT",
        "CREATE INDEX turns_open_progress ON turns(task_id) WHERE progress_message IS NOT NULL",
    ],
    [
        # 8: where an owner's or reviewer's marker was read from (rooms/judge/turn_objects.py):
        # its validated output object, or its text when it gave no valid object (counted).
        "ALTER TABLE turns ADD COLUMN marker_source TEXT"
        " CHECK (marker_source IS NULL OR marker_source IN ('object', 'text'))",
    ],
    [
        # 9: why an owner's or reviewer's marker is not its own first one, when in doubt (the
        # text's "conflicting" / "qualified" / "uncertain", an object's "conditions" /
        # "open_findings": rooms/judge/turn_objects.py), so readings in doubt can be counted.
        # No CHECK: a new kind of doubt must not need a migration to be stored.
        "ALTER TABLE turns ADD COLUMN marker_doubt TEXT",
    ],
    [
        # 10: the outcome ledger (rooms/judge/outcomes.py): how each ruling turned out, derived from
        # the store after every step of a task that had one, one row per ruling.
        """CREATE TABLE outcomes (
            verdict_id INTEGER PRIMARY KEY REFERENCES verdicts(id),
            task_id INTEGER NOT NULL REFERENCES tasks(id),
            group_name TEXT NOT NULL,
            verdict TEXT NOT NULL,
            result TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT '',
            ruled_at REAL NOT NULL,
            settled_at REAL,
            ruling_s REAL,
            people_s REAL,
            answer TEXT,
            sent_back TEXT
        )""",
        "CREATE INDEX outcomes_group ON outcomes(group_name, ruled_at)",
    ],
    [
        # 11: the dashboard (bot/dashboard, rooms/store/dashboard_auth.py). A one-time sign-in
        # link a person asked for in chat, kept as the SHA-256 of its secret (the secret itself
        # is only in the link), with the platform identity it signs in as; and every action
        # taken on the dashboard, with who took it and what came of it.
        """CREATE TABLE dashboard_links (
            secret_hash TEXT PRIMARY KEY,
            platform TEXT NOT NULL,
            user_id TEXT NOT NULL,
            roles TEXT NOT NULL DEFAULT '[]',
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            used_at REAL
        )""",
        """CREATE TABLE dashboard_actions (
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            who TEXT NOT NULL,
            action TEXT NOT NULL,
            task_id INTEGER,
            detail TEXT NOT NULL DEFAULT '',
            outcome TEXT NOT NULL
        )""",
        # The dashboard's newest-first lists and its change mark (MAX(updated_at)) without a
        # scan of every task.
        "CREATE INDEX tasks_updated ON tasks(updated_at)",
    ],
]

LATEST = len(MIGRATIONS)
