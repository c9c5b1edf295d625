"""The words and nouns every part of rooms/ stands on, the lowest layer (rooms/__init__.py).

- `markers.py`: roles, markers and verdicts as words, and the parser of a turn's marker line;
- `model.py`: the nouns (room, task, turn, ruling, firing, thresholds, group policy, card, …);
- `records.py`: what the store keeps and the `Change` a step makes;
- `machine.py`: state tables as data, and each registered protocol's table for the store;
- `ports.py`: the small protocols `bot/` fills in (runner, platform, policies, clock).
"""
