"""What every protocol runs on (rooms/__init__.py); it imports no protocol.

`driver.py` drives one task, asking its protocol (`protocol.py`, found in `registry.py`) at each
step; `context.py` is what a step can reach; `turns.py` runs a turn (`progress.py` shows it);
`outputs.py` and `outbox.py` post and deliver; `summons.py` (the arbiter on demand),
`escalations.py` (with `cards.py`) ask people; `decisions.py` writes decision records;
`status.py` says where a task stands.
"""
