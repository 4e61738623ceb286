"""The `fabcheck` command line. Sub-commands register themselves; each maps errors to exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from fabcheck.errors import FabcheckError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fabcheck", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    # Imported here so that `fabcheck --help` stays fast and one broken area cannot hide the others.
    from fabcheck import analyze_cli, intent_cli, validate_cli
    from fabcheck.lab import cli as lab_cli

    intent_cli.register(sub)
    analyze_cli.register(sub)
    validate_cli.register(sub)
    lab_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except FabcheckError as err:
        print(f"fabcheck: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as grep and friends do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit-time flush quiet
        return 141


if __name__ == "__main__":
    sys.exit(main())
