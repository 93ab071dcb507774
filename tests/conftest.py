"""Shared fixtures. GKL is the oracle: when it is missing the tests that need
it fail (not skip), because CI installs it and a silent skip would hide a
broken comparison. Set PYPHMM_ALLOW_NO_GKL=1 only where no JVM can exist."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oracle import gkl as gkl_oracle  # noqa: E402

DATA = os.environ.get("PYPHMM_SHARED_DATA",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))


@pytest.fixture(scope="session")
def shared_data():
    if not os.path.isdir(DATA):
        pytest.fail(f"shared test data not found at {DATA} (set PYPHMM_SHARED_DATA)")
    return DATA


@pytest.fixture(scope="session")
def gkl_jvm():
    reason = gkl_oracle.missing_reason()
    if reason:
        if os.environ.get("PYPHMM_ALLOW_NO_GKL") == "1":
            pytest.skip(f"GKL oracle unavailable: {reason}")
        pytest.fail(f"GKL oracle unavailable: {reason}")
    return gkl_oracle.start_jvm()
