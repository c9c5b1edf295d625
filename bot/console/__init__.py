"""The console room: Tribunal in a terminal, with you as the human (DESIGN §7).

A plain line-oriented program, no curses, so it works the same with stdin piped (tests,
scripts). The engine and store are the same ones Slack and Discord use; the console is an
adapter like theirs (bot/adapter.py) and reads the engine only, never the store.

- `adapter.py`: `ConsoleAdapter` (start, stop, deliver, finished), its registry factory;
  `tribunal chat`, the console alone, is bot/chat.py: it stands above `serve`, which this
  package never imports;
- `room.py`: typed lines and commands → `Inbound` events and engine queries;
- `screen.py`: what is printed (messages once, progress as a status line, the input prompt);
- `lines.py`: stdin read on a thread.

Importing this package declares the platform, nothing more: its adapter loads when it is used
(bot/adapter.py says why).
"""

from __future__ import annotations

from bot.adapter import PlatformSpec, register
from bot.settings_sections import CONSOLE_PLATFORM

register(PlatformSpec(CONSOLE_PLATFORM, factory="bot.console.adapter:console_factory"))
