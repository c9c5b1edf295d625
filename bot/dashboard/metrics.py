"""`/metrics` in the Prometheus text format, with the official prometheus-client library.

Everything is read from the store when scraped (rooms/store/dashboard_reads.py `read_counts`),
so any number of Tribunal processes on one database report the same numbers and a restart loses
nothing. A fresh registry per scrape holds these "custom collector" families; the process's own
metrics (the library's default registry) are not mixed in.

Cost and tokens are by group and role, and by the model that the group's settings give the role
now (the store keeps no model per turn: a group whose model changed reports its past under the
new name).
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.policies import SettingsPolicies
from rooms.store.dashboard_reads import Counts

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Fixed(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> list[Metric]:  # type: ignore[override]
        return self.families


def model_of(policies: SettingsPolicies, group: str, role: str) -> str:
    policy = next((p for p in policies.groups() if p.name == group), None)
    if policy is None:
        return "unknown"
    config = policy.agent_for(role)
    return f"{config.agent}:{config.model or 'default'}"


def families(
    counts: Counts, policies: SettingsPolicies, *, now: float, roundtrip_s: float | None
) -> list[Metric]:
    tasks = GaugeMetricFamily(
        "tribunal_tasks", "Tasks in the store by protocol and status", labels=["protocol", "status"]
    )
    for (protocol, status), n in sorted(counts.tasks_by_status.items()):
        tasks.add_metric([protocol, status], n)
    turns = CounterMetricFamily(
        "tribunal_turns", "Turns run, by role and how they ended", labels=["role", "status"]
    )
    for (role, status), n in sorted(counts.turns_by_role.items()):
        turns.add_metric([role, status], n)
    labels = ["group", "role", "model"]
    tokens = CounterMetricFamily(
        "tribunal_tokens", "Model tokens used, by group, role and model", labels=[*labels, "kind"]
    )
    cost = CounterMetricFamily(
        "tribunal_cost_usd", "Model spend in US dollars by group, role and model", labels=labels
    )
    for (group, role), (tokens_in, tokens_out, usd) in sorted(counts.usage_by_group_role.items()):
        model = model_of(policies, group, role)
        tokens.add_metric([group, role, model, "input"], tokens_in)
        tokens.add_metric([group, role, model, "output"], tokens_out)
        cost.add_metric([group, role, model], usd)
    firings = CounterMetricFamily(
        "tribunal_detector_firings", "Deadlock detector firings", labels=["detector"]
    )
    for detector, n in sorted(counts.firings_by_detector.items()):
        firings.add_metric([detector], n)
    failures = CounterMetricFamily(
        "tribunal_runner_failures", "Failed turns by the runner's error code", labels=["code"]
    )
    for code, n in sorted(counts.failures_by_code.items()):
        failures.add_metric([code], n)
    pending = GaugeMetricFamily("tribunal_outbox_pending", "Posts waiting to be delivered")
    pending.add_metric([], counts.outbox_pending)
    lag = GaugeMetricFamily(
        "tribunal_outbox_lag_seconds", "Age of the oldest post waiting to be delivered (0: none)"
    )
    oldest = counts.outbox_oldest_pending_at
    lag.add_metric([], max(0.0, now - oldest) if oldest is not None else 0.0)
    dead = GaugeMetricFamily("tribunal_outbox_dead", "Posts given up on after their retries")
    dead.add_metric([], counts.outbox_dead)
    found: list[Metric] = [tasks, turns, tokens, cost, firings, failures, pending, lag, dead]
    if roundtrip_s is not None:
        # What a claim of a task waits for: a round trip through the engine's own store
        # connection (its lock and worker thread), measured at this scrape.
        claim = GaugeMetricFamily(
            "tribunal_engine_store_roundtrip_seconds",
            "One round trip through the engine's store connection, as a claim makes it",
        )
        claim.add_metric([], roundtrip_s)
        found.append(claim)
    return found


def render(
    counts: Counts,
    policies: SettingsPolicies,
    *,
    now: float | None = None,
    roundtrip_s: float | None = None,
) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        _Fixed(families(counts, policies, now=now or time.time(), roundtrip_s=roundtrip_s))
    )
    return generate_latest(registry)
