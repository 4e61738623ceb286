"""The gate's host checks as tests; the fabcheck pytest plugin collects this module and parametrises it."""

from __future__ import annotations

import pytest

from fabcheck.checks.model import Status
from fabcheck.pytest_plugin import Case, describe


def test_fabcheck(fabcheck_case: Case) -> None:
    """Passes when no subject of the check fails on the node (errors and skips end in setup)."""
    if any(finding.status is Status.FAIL for finding in fabcheck_case.findings):
        pytest.fail(describe(fabcheck_case, Status.FAIL), pytrace=False)
