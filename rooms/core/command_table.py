"""The one command table (DESIGN §3 "Humans", §7): every command a person gives Tribunal, with
its words, what must be open for it, who may give it, what it does and its help line.

The chat (a word after the mention) and the console (the same word after a "/") both read this
table: rooms/commands.py dispatches every command of every platform through `run`, the console
hands its command lines to the engine as a mention does, and both helps are rendered from the
rows below and the protocols' registry (their command words open a task of their kind). A new
command is its word in rooms/base/words.py (`COMMAND_WORDS`, which no protocol may take), a row
here and its handler (rooms/core/command_handlers.py).

The words are those the shared parser (`parse`) reads: the first word after the mention, NFKC
(full-width letters and punctuation are the same word), lower case, with a leading "/" and
trailing punctuation dropped.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum

from rooms.base.model import GroupPolicy, Task
from rooms.base.words import (
    APPROVE,
    ARBITRATE,
    CHOOSE,
    COMMAND_WORDS,
    DASHBOARD,
    HELP,
    REJECT,
    STATUS,
    STOP,
    WAITING_HUMAN,
)
from rooms.core import command_handlers as do
from rooms.core.command_handlers import Asked
from rooms.core.escalations import may_answer, refusal
from rooms.core.registry import specs
from rooms.core.replies import reply


class Who(Enum):
    """Who may give a command."""

    ANYONE = "anyone in the room"
    APPROVERS = "the group's approvers"
    # Stopping throws the pair's work away: an approver, or the person who opened the task.
    APPROVERS_AND_OPENER = "the group's approvers and the task's opener"


class Needs(Enum):
    """What must be open in the room for a command to act; without it, the person is told."""

    NOTHING = "nothing"
    TASK = "an open task"
    QUESTION = "an open question"  # a task waiting for a person, with its escalation


class Alone(Enum):
    """When the word is a command rather than the start of a message: "stop the server
    crashing" opens a task (or is a message to the agents), it never stops one."""

    ALWAYS = "always a command"
    ONLY_ALONE = "a command only when nothing follows it"
    WHILE_ASKED = "with text after it, a command only while a question is open"


@dataclass(frozen=True)
class Command:
    """One row: `words` (the first is its name), `usage` (what follows the word, for the help),
    `help` (one line, no full stop: both helps print it), `who`, `needs`, `alone`, and `handler`
    (called once `needs` and `who` are met)."""

    words: tuple[str, ...]
    usage: str
    help: str
    who: Who
    needs: Needs
    alone: Alone
    handler: Callable[[Asked], Awaitable[bool]]

    @property
    def name(self) -> str:
        return self.words[0]

    def applies(self, after: str, question_open: bool) -> bool:
        """Whether this word, followed by `after`, is the command (else it is plain text)."""
        if not after or self.alone is Alone.ALWAYS:
            return True
        return self.alone is Alone.WHILE_ASKED and question_open


async def _help(asked: Asked) -> bool:
    return await do.show_help(asked, help_text(asked.policy))


# The order is the helps' order.
TABLE: tuple[Command, ...] = (
    Command(
        (APPROVE, REJECT),
        "",
        "answer the open escalation",
        Who.APPROVERS,
        Needs.QUESTION,
        Alone.WHILE_ASKED,
        do.approve_or_reject,
    ),
    Command(
        (CHOOSE,),
        "N",
        "pick option N of the open question",
        Who.APPROVERS,
        Needs.QUESTION,
        Alone.WHILE_ASKED,
        do.choose_by_number,
    ),
    Command(
        (STOP,),
        "",
        "close the task",
        Who.APPROVERS_AND_OPENER,
        Needs.TASK,
        Alone.ONLY_ALONE,
        do.stop,
    ),
    Command(
        (STATUS,),
        "",
        "where the task is",
        Who.ANYONE,
        Needs.NOTHING,
        Alone.ONLY_ALONE,
        do.show_status,
    ),
    Command(
        (ARBITRATE,),
        "[now] [what to look at]",
        "call the arbiter (now: stop the turn)",
        Who.ANYONE,
        Needs.NOTHING,  # rooms.core.summons says why a room cannot call one
        Alone.ALWAYS,
        do.arbitrate,
    ),
    Command(
        (DASHBOARD,),
        "",
        "a one-time dashboard sign-in link (approvers)",
        Who.ANYONE,  # the handler tells a non-approver who may, and that the dashboard may be off
        Needs.NOTHING,
        Alone.ONLY_ALONE,
        do.sign_in,
    ),
    Command((HELP,), "", "this list", Who.ANYONE, Needs.NOTHING, Alone.ONLY_ALONE, _help),
)

_BY_WORD = {word: command for command in TABLE for word in command.words}
if sorted(_BY_WORD) != sorted(COMMAND_WORDS) or len(_BY_WORD) != len(COMMAND_WORDS):
    raise RuntimeError(  # a row without its vocabulary word, or a word without its row
        f"the command table's words {sorted(_BY_WORD)} are not COMMAND_WORDS {COMMAND_WORDS}"
    )


def lookup(word: str) -> Command | None:
    """The row of a command word as `parse` returns it (lower case, no "/")."""
    return _BY_WORD.get(word)


def typed_word(first: str) -> str:
    """A first word as the tables are keyed: NFKC (full-width `ａｐｐｒｏｖｅ！`, `／stop` are
    the words people mean), without a leading "/" or trailing punctuation, lower case."""
    return unicodedata.normalize("NFKC", first).lstrip("/").rstrip(".,:;!?。、").lower()


_MENTION = re.compile(r"^\s*(?:<@[^>]*>|@\S+)[\s,:]*")


def parse(text: str) -> tuple[str | None, str, str]:
    """(command word or None, the text after it, the whole text without the mention)."""
    rest = text
    while (stripped := _MENTION.sub("", rest, count=1)) != rest:
        rest = stripped
    rest = rest.strip()
    first, _, after = rest.partition(" ")
    word = typed_word(first)
    if word in _BY_WORD:
        return word, after.strip(), rest
    return None, "", rest


_NO_QUESTION = "There is no open question to answer here."


async def run(command: Command, asked: Asked) -> bool:
    """Give the command, once what it needs is open and the person may; else say why."""
    ctx, inbound, policy, task, escalation = (
        asked.ctx,
        asked.inbound,
        asked.policy,
        asked.task,
        asked.escalation,
    )
    if command.needs is Needs.TASK and task is None:
        return await reply(ctx, inbound, policy, f"There is no open task to {asked.word} here.")
    if command.needs is Needs.QUESTION and (
        task is None or escalation is None or task.status != WAITING_HUMAN
    ):
        return await reply(ctx, inbound, policy, _NO_QUESTION)
    user, roles = inbound.user, inbound.roles
    if command.who is Who.APPROVERS and not may_answer(policy, user, roles):
        return await reply(ctx, inbound, policy, refusal(policy, user), private=True)
    if command.who is Who.APPROVERS_AND_OPENER and not may_stop(policy, task, user, roles):
        assert task is not None
        text = f"Only an approver or the person who opened task #{task.id} can {asked.word} it."
        return await reply(ctx, inbound, policy, text, private=True)
    return await command.handler(asked)


def may_stop(policy: GroupPolicy, task: Task | None, user: str, roles: frozenset[str]) -> bool:
    """An approver of the group or the task's opener."""
    return may_answer(policy, user, roles) or (task is not None and task.opened_by == user)


@dataclass(frozen=True)
class HelpRow:
    """One line of a help: the words that call it, what follows them, what it does."""

    words: tuple[str, ...]
    usage: str
    help: str

    def typed(self, prefix: str = "", between: str = ", ") -> str:
        """How it is typed: `/approve, /reject` (the console), `choose N`."""
        words = between.join(f"{prefix}{w}" for w in self.words)
        return f"{words} {self.usage}".rstrip()


def command_rows() -> list[HelpRow]:
    """The commands, in the table's order (help last)."""
    return [HelpRow(c.words, c.usage, c.help) for c in TABLE]


def opener_rows() -> list[HelpRow]:
    """The protocols' command words, as the registry declares them (they open a task)."""
    return [
        HelpRow((s.command,), s.usage, s.summary or f"open a {s.name}")
        for s in specs()
        if s.command
    ]


def help_text(policy: GroupPolicy) -> str:
    """The chat's help: how to start, the protocols' words, then one line per command."""
    openers = ", ".join(f"`{row.typed()}`" for row in opener_rows())
    deliberations = f" {openers} open a deliberation." if openers else ""
    lines = [f"• `{row.typed(between='` / `')}`: {row.help}" for row in command_rows()]
    return "\n".join(
        [
            f"{_capital(policy.how_to('a task'))} to start one.{deliberations}",
            "In a room with a task:",
            *lines,
            "Anything else you write reaches the agents' next turn.",
        ]
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
