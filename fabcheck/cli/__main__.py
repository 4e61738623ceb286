"""`python -m fabcheck.cli`: the same as the `fabcheck` command."""

import sys

from fabcheck.cli import main

sys.exit(main())
