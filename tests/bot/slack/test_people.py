"""People by name, never pinged (issue 27, item 12): Tribunal's Slack posts said "Task opened by
U0REQUESTER" and "only approvers can answer: U0BOSSBOSS". Now every person the engine names is
shown by display name (users.info, asked once per person), as plain text, not a `<@U…>` mention
that would notify them; agents' words are left as written."""

from __future__ import annotations

from pathlib import Path

from tests.bot.slack.kit import slack_kit
from tests.bot.slack.test_http_e2e import ruling
from tests.fakes.runner import Script

PEOPLE = {"U0REQUESTER": "Rita Requester", "U0BOSSBOSS": "Bob Boss", "U0MALLORY1": "Mallory"}


async def test_the_people_tribunal_names_are_shown_by_name_and_not_pinged(tmp_path: Path) -> None:
    script: Script = {
        "owner": ["BLOCKED: I need the staging key. (ask U0BOSSBOSS)", "DONE\nused it", "DONE"],
        "arbiter": [ruling("ESCALATE", question="May the owner use it?", options=["yes", "no"])],
        "reviewer": ["APPROVED"],
    }
    async with slack_kit(tmp_path, script, approvers=frozenset({"U0BOSSBOSS"})) as kit:
        kit.fake.people = dict(PEOPLE)
        ts = await kit.mention("add integration tests", user="U0REQUESTER")
        await kit.settle()
        [card] = [m for m in kit.thread(ts) if m.buttons()]
        assert await kit.click(card, "tribunal_choose", user="U0MALLORY1") == 200
        await kit.settle()
        assert await kit.click(card, "tribunal_choose", user="U0BOSSBOSS") == 200
        await kit.settle()
        shown = [m.shown() for m in kit.thread(ts)]
        told = [e["text"] for e in kit.fake.ephemerals]
        lookups = [c.params.get("user") for c in kit.fake.called("users.info")]
        posted = [str(c.params.get("blocks")) for c in kit.fake.called("chat.postMessage")]

    assert shown[0].startswith("📋 Task opened by Rita Requester."), shown[0]
    assert told == ["Mallory: only approvers can answer: Bob Boss."], told
    [question] = [p for p in posted if "Only approvers can answer" in p]  # its card, as posted
    assert "Only approvers can answer: Bob Boss." in question
    assert any(s.startswith("Bob Boss chose an option") for s in shown), shown
    tribunal_words = [s for s in shown if "(ask U0BOSSBOSS)" not in s]
    for uid in PEOPLE:
        assert not any(uid in s for s in tribunal_words + told), uid
    assert not any("<@U0" in s for s in shown + told)  # nobody is pinged
    assert any("(ask U0BOSSBOSS)" in s for s in shown)  # the owner's words, as written
    assert sorted(lookups) == sorted(PEOPLE)  # each person asked about once
