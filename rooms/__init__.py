"""Tribunal's engine: layers that import one way only, from the top down (DESIGN §1; the import
contracts in pyproject.toml, run by tests/rooms/test_layers.py, hold them so).

- `engine.py` (`Engine`) and `commands.py` (inbound messages and clicks): the public surface;
- `pair/`, `arena/`, `debate/`, `resolve/`: one folder per protocol. They never import one
  another, but for one tie that is a layer of its own: the pair runs resolve's machine as its
  `resolving` phase, so `pair/` stands above the deliberation protocols;
- `phased/`: what the phased protocols (arena, debate, resolve) share: the deliberation
  vocabulary and the adapter that turns a machine of phases into a protocol;
- `core/`: what every protocol runs on: the driver, the protocol interface and its registry, the
  step context, turns, progress, outputs and outbox delivery, summons, escalations and their
  cards, decision records, the status text. It imports no protocol;
- `store/`: SQLite, and how long it keeps things;
- `references/` (other models' opinions) and `work/` (worktrees, git, the workspace hash);
- `judge/`: pure readers of text and history (verdicts, findings, detectors, replay, quoting);
- `base/`: the words (markers) and the nouns (model, records, state tables, ports).

Importing `rooms` registers the built-in protocols, one line each below: a new protocol is its
folder (with a `ProtocolSpec`: its name, command word, state table, limits, prompts, usage) and
one line here; the settings, the group policy, the prompts a group may replace and both helps
read the registry (rooms/core/registry.py).
"""

import rooms.arena.protocol
import rooms.debate.protocol
import rooms.pair.protocol
import rooms.resolve.protocol
from rooms.core.registry import register

register(
    rooms.pair.protocol.SPEC
)  # the default kind of task: any text that is no command word opens one
# The deliberation protocols (DESIGN §9), each opened by its command word; they pass the same
# checks as any other. The help lists them in this order.
register(rooms.debate.protocol.SPEC)
register(rooms.resolve.protocol.SPEC)
register(rooms.arena.protocol.SPEC)
