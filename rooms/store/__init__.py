"""The store, on SQLite (the default) or PostgreSQL: connection, schema and migrations, row
mappers, the Change's apply, tasks, outbox. `Store` is the one object the rest of rooms/ talks
to."""

from rooms.store.store import BUSY_TIMEOUT_MS, Store, StoreError

__all__ = ["BUSY_TIMEOUT_MS", "Store", "StoreError"]
