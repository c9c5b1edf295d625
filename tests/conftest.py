"""Suite-wide hooks: a test marked `missing_tool` (tests/fakes/required.py) fails at setup."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.fakes import postgres as pg_fake
from tests.fakes.postgres import Server
from tests.fakes.required import unavailable

# Hypothesis judges a test by its examples, never by the clock: its deadline and its "input
# generation is slow" health check are timing checks, and on a loaded 2-core machine they fail
# tests whose properties hold (seen: 6 inputs in 1 s while eight test runs shared the cores).
settings.register_profile("tribunal", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("tribunal")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "missing_tool: a tool the test needs is missing under TRIBUNAL_REQUIRE_ENGINE=1: it fails",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    mark = item.get_closest_marker("missing_tool")
    if mark is not None:
        pytest.fail(f"{mark.args[0]} (TRIBUNAL_REQUIRE_ENGINE=1: required, not skipped)")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    """One real PostgreSQL for the whole run (tests/fakes/postgres.py), started on first use;
    each test takes a fresh schema of it (`Server.fresh_url`). Skipped when PostgreSQL is not
    installed, failed then under TRIBUNAL_REQUIRE_ENGINE=1 (tests/run installs it)."""
    if not pg_fake.available():
        unavailable("PostgreSQL is not installed (Debian's postgresql; tests/run installs it)")
    with pg_fake.server() as server:
        assert server is not None
        yield server
