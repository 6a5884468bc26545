"""Shared test configuration: hypothesis profiles.

``dev`` (the default) keeps the local run quick; ``ci`` (chosen when ``CI`` is set, or with
``HYPOTHESIS_PROFILE=ci``) tries many more examples. Deadlines are off: the first call of a
torch function can be slow, and timing is the benchmarks' business, not the tests'.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
