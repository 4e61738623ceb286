"""python -m fabcheck_lab.mockswitch --run-dir RUN_DIR: serve every switch in RUN_DIR/switches/spec.json."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from fabcheck_lab.mockswitch.server import serve
from fabcheck_lab.mockswitch.spec import MockSwitchError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fabcheck_lab.mockswitch", description=__doc__)
    parser.add_argument(
        "--run-dir", type=Path, required=True, help="lab run directory (holds switches/spec.json)"
    )
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.run_dir))
    except MockSwitchError as exc:
        print(f"mockswitch: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"mockswitch: cannot listen: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
