"""/metrics (parsed by prometheus-client's own parser) and /healthz (unhealthy when the store or
a platform connection is down), on the real engine and Slack adapter."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.bot.dashboard.kit import dashboard_kit
from tests.bot.slack.test_http_e2e import ESCALATING
from tests.fakes.runner import Reply, ScriptedRunner


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_metrics_are_prometheus_text_with_the_stores_numbers(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        await kit.slack.mention("add integration tests")
        await kit.slack.settle()
        async with kit.client().get(kit.url("/metrics")) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            text = await response.text()
    got = samples(text)
    assert got[("tribunal_tasks", (("protocol", "pair"), ("status", "waiting_human")))] == 1
    assert got[("tribunal_turns_total", (("role", "owner"), ("status", "done")))] == 1
    assert got[("tribunal_turns_total", (("role", "arbiter"), ("status", "done")))] == 1
    assert got[("tribunal_detector_firings_total", (("detector", "blocked"),))] == 1
    assert got[("tribunal_outbox_dead", ())] == 0
    assert got[("tribunal_outbox_lag_seconds", ())] >= 0
    assert ("tribunal_engine_store_roundtrip_seconds", ()) in got
    # Tokens and cost by group, role and the model the group's settings give the role.
    costs = {k: v for k, v in got.items() if k[0] == "tribunal_cost_usd_total"}
    assert costs and all(dict(k[1])["group"] == "g" for k in costs)
    assert {dict(k[1])["model"] for k in costs} == {"claude:default"}


async def test_healthz_is_ok_then_names_the_store_that_is_down(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path) as kit:
        client = kit.client()
        async with client.get(kit.url("/healthz")) as response:
            assert response.status == 200
            text = await response.text()
        assert "engine: ok" in text and "store: ok" in text and "slack: ok" in text
        await kit.app.store.close()  # the engine's database connection is gone
        async with client.get(kit.url("/healthz")) as response:
            assert response.status == 503
            assert "store: down" in await response.text()


async def test_healthz_is_unhealthy_when_the_platform_connection_is_down(tmp_path: Path) -> None:
    gate = asyncio.Event()
    runner = ScriptedRunner({"owner": [Reply(text="DONE", gate=gate)], "reviewer": ["APPROVED"]})
    async with dashboard_kit(tmp_path, runner=runner) as kit:
        client = kit.client()
        await kit.slack.mention("build it")
        await runner.wait_calls(1)
        # Slack revokes the token while the owner works: the owner's post is refused, and the
        # adapter knows its platform is gone (serve would end; a monitor sees it first here).
        kit.slack.fake.revoke("token_revoked")
        gate.set()
        async with asyncio.timeout(10):
            while kit.slack.adapter.alive():
                await asyncio.sleep(0.02)
        async with client.get(kit.url("/healthz")) as response:
            assert response.status == 503
            text = await response.text()
        assert "slack: disconnected" in text and "store: ok" in text


async def test_metrics_count_runner_failures_by_their_code(tmp_path: Path) -> None:
    crash = Reply(error="the runner died", error_code="crashed")
    timeout = Reply(error="no event for too long", error_code="idle_timeout")
    runner = ScriptedRunner({"owner": [crash, timeout, crash], "arbiter": ESCALATING["arbiter"]})
    async with dashboard_kit(tmp_path, runner=runner) as kit:
        await kit.slack.mention("build it")
        await kit.slack.settle()
        async with kit.client().get(kit.url("/metrics")) as response:
            got = samples(await response.text())
        failed = {k: v for k, v in got.items() if k[0] == "tribunal_runner_failures_total"}
        turns = await kit.app.store.turns(1)
    by_code = {dict(k[1])["code"]: v for k, v in failed.items()}
    # Two failures in a row make the task wait for people (the third reply is never asked for).
    assert by_code == {"crashed": 1, "idle_timeout": 1}
    assert sum(by_code.values()) == len([t for t in turns if t.status == "failed"])
