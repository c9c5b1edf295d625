"""Who may see and do what on the dashboard, attacked as a hostile visitor would: no session,
a forged or expired cookie, a missing CSRF token, a link used twice, another site's form, an
approver of another group, and markup in what agents and people wrote."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.dashboard.sessions import (  # the cookie's own encoding, to forge one
    COOKIE,
    _b64,
    _unb64,
    new_session,
    read_session,
)
from bot.doctor import check_dashboard
from bot.settings_dashboard import DashboardSettings
from bot.settings_sections import SettingsError
from tests.bot.dashboard.kit import BOSS, NOBODY, OTHER, TOKEN, dashboard_kit, kit_settings
from tests.bot.slack.test_http_e2e import ESCALATING

PAGES = [
    "/",
    "/tasks/part",
    "/tasks/1",
    "/tasks/1/part",
    "/waiting",
    "/waiting/part",
    "/costs",
    "/judgment",
    "/events",
]
ACTIONS = ["/tasks/1/stop", "/tasks/1/arbitrate", "/questions/1/answer", "/signout"]
SECRET_TEXT = "add integration tests"


async def test_every_page_and_action_without_a_session_is_refused(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        await kit.slack.mention(SECRET_TEXT)
        await kit.slack.settle()
        anonymous = kit.client()
        for path in PAGES:
            async with anonymous.get(kit.url(path), allow_redirects=False) as response:
                assert response.status in (303, 401), path
                if response.status == 303:
                    assert response.headers["Location"] == "/signin"
                assert SECRET_TEXT not in await response.text(), path
        for path in ACTIONS:
            data = {"kind": "approve", "csrf": "x"}
            async with anonymous.post(kit.url(path), data=data, allow_redirects=False) as response:
                assert response.status == 401, path
        # Nothing moved: the question is open, the task waits.
        [question] = await kit.app.store.escalations(1)
        assert question.status == "open"
        assert (await kit.app.store.task(1)).status == "waiting_human"  # type: ignore[union-attr]


async def test_forged_and_expired_cookies_are_refused(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path) as kit:
        key = kit.running.dashboard.key
        now = time.time()
        _, good = new_session(key, operator=False, platform="slack", user=NOBODY, now=now, hours=1)
        body, mac = good.split(".")
        # The payload changed to the operator, the signature kept.
        raised = _unb64(body).replace(b'"op":false', b'"op":true')
        _, other_key = new_session(b"k" * 32, operator=True, now=now, hours=1)
        _, expired = new_session(key, operator=True, now=now - 7200, hours=1)
        forged = {
            "payload changed": f"{_b64(raised)}.{mac}",
            "signed with another key": other_key,
            "expired": expired,
            "no signature": body,
            "garbage": "%%%.%%%",
        }
        for why, cookie in forged.items():
            assert read_session(key, cookie, now) is None, why
            client = kit.client()
            client.cookie_jar.update_cookies({COOKIE: cookie})
            async with client.get(kit.url("/"), allow_redirects=False) as response:
                assert response.status == 303, why
        client = kit.client()
        client.cookie_jar.update_cookies({COOKIE: good})
        async with client.get(kit.url("/"), allow_redirects=False) as response:
            assert response.status == 200  # the genuine cookie works: the refusals are real


async def test_an_action_without_the_csrf_token_is_refused(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        await kit.slack.mention(SECRET_TEXT)
        await kit.slack.settle()
        operator = await kit.operator()
        other = await kit.operator()
        foreign_token = await kit.csrf(other)
        for headers, data in [
            ({}, {}),  # none at all
            ({"X-CSRF-Token": "wrong"}, {}),
            ({"X-CSRF-Token": foreign_token}, {}),  # another session's
            ({}, {"csrf": foreign_token}),
        ]:
            async with operator.post(
                kit.url("/tasks/1/stop"), headers=headers, data=data
            ) as response:
                assert response.status == 403
                assert "CSRF" in await response.text()
        assert (await kit.app.store.task(1)).status == "waiting_human"  # type: ignore[union-attr]
        # Another site's form, even with a token it could not have: refused by its Origin.
        token = await kit.csrf(operator)
        async with operator.post(
            kit.url("/tasks/1/stop"),
            headers={"X-CSRF-Token": token, "Origin": "http://evil.example"},
        ) as response:
            assert response.status == 403
        # With its own token, the same request stops the task, and says who did it.
        async with operator.post(
            kit.url("/tasks/1/stop"), headers={"X-CSRF-Token": token}
        ) as response:
            assert response.status == 200, await response.text()
        assert (await kit.app.store.task(1)).status == "closed"  # type: ignore[union-attr]
        [*_, stopped] = await kit.running.dashboard.store.dashboard_actions(1)
        assert (stopped.who, stopped.action, stopped.outcome) == (
            "operator (token)",
            "stop",
            "stopped",
        )


async def test_a_wrong_token_signs_nobody_in(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path) as kit:
        client = kit.client()
        for token in ("", "wrong", TOKEN.upper(), TOKEN + " "):
            async with client.post(
                kit.url("/signin"), data={"token": token}, allow_redirects=False
            ) as response:
                assert response.status == 403
        async with client.get(kit.url("/"), allow_redirects=False) as response:
            assert response.status == 303


async def test_a_one_time_link_works_once_and_not_after_it_expires(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path) as kit:
        link = await kit.link_for(BOSS)
        secret = link.split("?s=", 1)[1]
        stored = await kit.app.store._rows("SELECT secret_hash FROM dashboard_links")
        assert secret not in str([tuple(r) for r in stored])  # only its hash is kept
        # Opening it (a link preview does) spends nothing: only the button's POST does.
        first = kit.client()
        async with first.get(link) as response:
            assert response.status == 200
        async with first.post(
            kit.url("/signin/link"), data={"s": secret}, allow_redirects=False
        ) as response:
            assert response.status == 303
        async with first.get(kit.url("/")) as response:
            assert BOSS in await response.text()
        second = kit.client()
        async with second.post(
            kit.url("/signin/link"), data={"s": secret}, allow_redirects=False
        ) as response:
            assert response.status == 403
        async with second.get(kit.url("/"), allow_redirects=False) as response:
            assert response.status == 303
        # A link past its time signs nobody in.
        late = await kit.link_for(BOSS)
        kit.running.dashboard.clock = lambda: time.time() + 16 * 60
        async with kit.client().post(
            kit.url("/signin/link"), data={"s": late.split("?s=", 1)[1]}, allow_redirects=False
        ) as response:
            assert response.status == 403


async def test_an_approver_of_another_group_can_neither_see_nor_answer(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        await kit.slack.mention(SECRET_TEXT)
        await kit.slack.settle()
        for user in (OTHER, NOBODY):
            person = await kit.person(user)
            token = await kit.csrf(person)
            async with person.get(kit.url("/")) as response:
                assert SECRET_TEXT not in await response.text()
            async with person.get(kit.url("/tasks/1")) as response:
                assert response.status == 404
            async with person.post(
                kit.url("/questions/1/answer"),
                headers={"X-CSRF-Token": token},
                data={"kind": "approve"},
            ) as response:
                assert response.status in (403, 404)
        [question] = await kit.app.store.escalations(1)
        assert question.status == "open"
        # The operator sees it, and may stop it, but answers nothing: an answer is a person's.
        operator = await kit.operator()
        async with operator.post(
            kit.url("/questions/1/answer"),
            headers={"X-CSRF-Token": await kit.csrf(operator)},
            data={"kind": "approve"},
        ) as response:
            assert response.status == 403
        [question] = await kit.app.store.escalations(1)
        assert question.status == "open"
        refused = [a for a in await kit.running.dashboard.store.dashboard_actions(1)]
        assert {a.who for a in refused if a.outcome == "refused"} >= {"operator (token)"}


HOSTILE = '<script>alert("task")</script><img src=x onerror=alert(1)>'


async def test_markup_from_agents_people_and_files_is_shown_escaped(tmp_path: Path) -> None:
    script = {
        "owner": ['BLOCKED: <script>alert("owner")</script> need </pre><b>bold</b>'],
        "arbiter": ESCALATING["arbiter"],
    }
    async with dashboard_kit(tmp_path, script) as kit:  # type: ignore[arg-type]
        # As Slack sends what a person typed: its own markup characters escaped.
        slack_text = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        await kit.slack.mention(slack_text)
        await kit.slack.settle()
        task = await kit.app.store.task(1)
        assert task is not None and task.text == HOSTILE  # stored as the person wrote it
        operator = await kit.operator()
        for path in ("/", "/tasks/1", "/waiting"):
            async with operator.get(kit.url(path)) as response:
                page = await response.text()
                csp = response.headers["Content-Security-Policy"]
            assert "<script>alert" not in page and "<img" not in page, path
            assert "&lt;script&gt;alert(" in page and "&lt;img src=x" in page, path
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        async with operator.get(kit.url("/tasks/1")) as response:
            page = await response.text()
        assert "&lt;/pre&gt;&lt;b&gt;bold&lt;/b&gt;" in page


def test_the_token_is_kept_hashed_in_the_settings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SHA-256"):
        DashboardSettings(token_sha256=TOKEN)
    assert kit_settings(tmp_path).dashboard.token_sha256 != TOKEN


@pytest.mark.parametrize(
    ("host", "tls", "warned"),
    [
        ("127.0.0.1", False, False),
        ("::1", False, False),
        ("localhost", False, False),
        ("0.0.0.0", False, True),
        ("192.168.1.5", False, True),
        ("dash.example.org", False, True),
        ("0.0.0.0", True, False),
    ],
)
def test_doctor_warns_when_the_dashboard_is_exposed_without_tls(
    tmp_path: Path, host: str, tls: bool, warned: bool
) -> None:
    settings = kit_settings(tmp_path)
    settings.dashboard = DashboardSettings(port=8080, host=host, behind_tls=tls)
    check = check_dashboard(settings)
    assert check is not None and check.ok is not warned
    assert not check.required  # a warning: the bot still runs
    if warned:
        assert "without TLS" in check.text


def test_doctor_says_nothing_of_a_dashboard_that_is_off(tmp_path: Path) -> None:
    settings = kit_settings(tmp_path)
    settings.dashboard = DashboardSettings()
    assert check_dashboard(settings) is None


def test_settings_errors_name_the_field() -> None:
    with pytest.raises((SettingsError, ValueError)):
        DashboardSettings(port=70000)


def test_the_token_tool_prints_a_token_and_the_hash_to_keep(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bot.dashboard.token import digest, main, token_matches

    assert main() == 0
    out = capsys.readouterr().out
    token = out.split("it is not stored anywhere): ", 1)[1].split()[0]
    assert f'token_sha256 = "{digest(token)}"' in out
    assert len(token) >= 40 and token_matches(token, digest(token))
    assert not token_matches(token, None) and not token_matches("", digest(""))
