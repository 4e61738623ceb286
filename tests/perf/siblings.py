"""The perf tests reuse the screenshot and PNG helpers of tests/report and the lab helpers of tests/lab:
import this module first. (Not a conftest.py: a second module named `conftest` would shadow
tests/conftest.py for every test that imports its corpus helpers.)"""

from __future__ import annotations

import sys
from pathlib import Path

REPORT_TESTS = Path(__file__).parents[1] / "report"
if str(REPORT_TESTS) not in sys.path:
    sys.path.insert(0, str(REPORT_TESTS))

LAB_TESTS = Path(__file__).parents[1] / "lab"
if str(LAB_TESTS) not in sys.path:
    sys.path.insert(0, str(LAB_TESTS))
