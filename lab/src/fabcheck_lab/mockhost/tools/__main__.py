"""``python -m fabcheck_lab.mockhost.tools TOOL ARGS...`` (the zip application uses the same entry)."""

import sys

from .dispatch import main

sys.exit(main())
