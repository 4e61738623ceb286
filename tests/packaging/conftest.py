"""tests/packaging: the lab test here brings its lab up through tests/lab's labsupport."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
