"""Settings for the whole suite.

Hypothesis judges a test by its examples, never by the clock: its deadline and its "input
generation is slow" health check are timing checks, and on a loaded 2-core machine they fail
tests whose properties hold (seen: 6 inputs in 1 s while eight test runs shared the cores).
"""

from hypothesis import HealthCheck, settings

settings.register_profile("tribunal", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("tribunal")
