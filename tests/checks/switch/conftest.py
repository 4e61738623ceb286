"""The switch check tests share the small fabric of tests/checks/switchfabric.py (one switch per
platform, replayed from the captured mock outputs under tests/data/switch)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
