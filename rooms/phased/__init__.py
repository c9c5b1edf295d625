"""What the phased protocols (arena, debate, resolve) share (rooms/__init__.py): the vocabulary
of a deliberation machine (`deliberation.py`) and the adapter that makes such a machine of
phases a protocol the driver runs (`protocol.py`, `PhasedProtocol`)."""
