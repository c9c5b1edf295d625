"""`tribunal …`: the command line (console script `tribunal = bot.cli:main`).

Subcommands register themselves in `SUBCOMMANDS`: each is a function that adds its parser to
the subparsers and sets `handler` (args → exit status). To add one (e.g. `tribunal image build`),
write such a function and append it to the tuple.

Exit statuses: 0 done; 1 a check failed (doctor); 2 bad input (usage, a file replay cannot read);
78 unusable settings (EX_CONFIG), with a message naming the field and never a traceback, or a
database that cannot be used (unreachable, or of a newer Tribunal: nothing is changed in it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

import bot.platforms  # noqa: F401  (declares the platforms: the settings read them)
from bot.adapter import Adapter
from bot.settings import Settings, load_settings
from bot.settings_sections import SettingsError
from rooms.store import StoreError

EXIT_CONFIG = 78
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

Handler = Callable[[argparse.Namespace], int]


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(args.config)


def _log(args: argparse.Namespace, settings: Settings, default_level: str) -> None:
    """The log for a long-running command (bot/logs.py), with every token kept out of it."""
    from bot.logs import configure_logging, secrets_of

    configure_logging(
        args.log_level, args.log_format, default_level=default_level, secrets=secrets_of(settings)
    )


# -- serve / chat ---------------------------------------------------------------------------------


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "serve", help="run the bot on the configured platforms (the console room without tokens)"
    )
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from bot.serve import configured_adapters, serve, unavailable_platforms

    settings = _settings(args)
    adapters = configured_adapters(settings)
    # A server logs what it does; the console room alone (no platform token) is `chat`.
    _log(args, settings, "WARNING" if all(a.platform == "console" for a in adapters) else "INFO")
    missing = unavailable_platforms(settings)
    if missing:
        instead = "; opening the console room instead" if _has_console(adapters) else ""
        print(
            f"tribunal: {' and '.join(missing)} configured, but the adapters are not yet "
            f"available in this build{instead}",
            file=sys.stderr,
        )
    try:
        return asyncio.run(serve(settings, adapters))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _has_console(adapters: list[Adapter]) -> bool:
    return any(a.platform == "console" for a in adapters)


def _add_chat(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("chat", help="open the console room in this terminal")
    lockstep = parser.add_mutually_exclusive_group()
    lockstep.add_argument(
        "--lockstep",
        dest="lockstep",
        action="store_true",
        default=None,
        help="handle each line only once the agents are idle (default when stdin is not a TTY)",
    )
    lockstep.add_argument(
        "--no-lockstep",
        dest="lockstep",
        action="store_false",
        help="hand each line to the room at once, even while agents work",
    )
    parser.set_defaults(handler=_chat)


def _chat(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _log(args, settings, "WARNING")  # the room is on stdout; only what needs a look on stderr
    return _run_console(settings, args.lockstep)


def _run_console(settings: Settings, lockstep: bool | None = None) -> int:
    from bot.chat import chat  # imported late: replay and doctor need no engine

    try:
        return asyncio.run(chat(settings, stdin=sys.stdin, stdout=sys.stdout, lockstep=lockstep))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


# -- replay -------------------------------------------------------------------------------------


def _add_replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "replay", help="feed a recorded room (JSON transcript) through markers and detectors"
    )
    parser.add_argument("file", type=Path, help="transcript: {task, turns: [{role, text, tree}]}")
    parser.add_argument("--json", action="store_true", help="one JSON object per turn")
    parser.add_argument(
        "--judge",
        type=Path,
        default=None,
        metavar="FILE",
        help='recorded progress judgments, {"judgments": [{"turn": N, "answer": "…"}]}: '
        "replays the no_progress detector offline",
    )
    parser.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace) -> int:
    from rooms.judge.replay import format_row, load_judgments, replay
    from rooms.judge.transcript import TranscriptError, load_transcript

    try:
        transcript = load_transcript(str(args.file))
        judgments = load_judgments(str(args.judge)) if args.judge is not None else None
    except TranscriptError as exc:
        print(f"tribunal replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # should the loader let one through: still a message, not a traceback
        print(f"tribunal replay: {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        for row in replay(transcript, judgments=judgments):
            print(row.model_dump_json() if args.json else format_row(row))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`tribunal replay f | head`): end quietly, as other tools do. Python
        # would flush stdout again at exit and complain; point it at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


# -- doctor -------------------------------------------------------------------------------------


def _add_doctor(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "doctor", help="check settings, credentials, runner binaries, database and engine"
    )
    parser.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from bot.doctor import run_doctor

    return run_doctor(args.config, out=sys.stdout)


def _add_image(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from bot.image_command import add_image_command  # `tribunal image build|fetch`

    add_image_command(sub)


def _add_stats(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from bot.stats_command import add_stats_command  # `tribunal stats [--group G] [--json]`

    add_stats_command(sub)


def _add_migrate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from bot.migrate_command import add_migrate_command  # `tribunal migrate [--check]`

    add_migrate_command(sub)


SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None], ...] = (
    _add_serve,
    _add_chat,
    _add_replay,
    _add_doctor,
    _add_image,
    _add_stats,
    _add_migrate,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tribunal",
        description="Owner/reviewer pairs of coding agents, with an arbiter for their deadlocks.",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="settings file to read instead of ./tribunal.toml",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        default=None,
        help="what serve and chat log on stderr (default: TRIBUNAL_LOG_LEVEL, else INFO for "
        "serve with Slack or Discord, WARNING for the console room)",
    )
    parser.add_argument(
        "--log-format",
        type=str.lower,
        choices=("text", "json"),
        default=None,
        help="one line per record as text, or as JSON (default: TRIBUNAL_LOG_FORMAT, else text)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return handler(args)
    except SettingsError as exc:
        for line in exc.lines:
            print(f"tribunal: {line}", file=sys.stderr)
        return EXIT_CONFIG
    except StoreError as exc:  # the database cannot be used (newer schema, unreachable, …)
        print(f"tribunal: {exc}", file=sys.stderr)
        return EXIT_CONFIG


if __name__ == "__main__":
    sys.exit(main())
