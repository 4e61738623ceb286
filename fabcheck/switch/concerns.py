"""The concerns a switch push can be scoped to, and how the switch play's tags choose them.

A push scoped to some concerns stages only the operations of those concerns: each driver sorts its
own operations (NVUE lines, EOS lines within their blocks, SONiC patch operations by table and
field) into concerns, and the stale fabcheck-owned entries of the other concerns are left as they
run. The rendered config itself is always whole.
"""

from __future__ import annotations

from collections.abc import Iterable

from fabcheck.errors import FabcheckError

CONCERNS = ("dscp", "pfc", "ecn", "scheduler", "watchdog", "mtu", "buffers")
ALL_CONCERNS = frozenset(CONCERNS)
# Tags of the switch play that mean "the whole switch" (`all` is what Ansible reports without --tags).
WHOLE_SWITCH_TAGS = ("all", "switch")


class ConcernError(FabcheckError):
    """A concern name that is not one of CONCERNS."""


def chosen_concerns(names: Iterable[str]) -> frozenset[str]:
    """The named concerns, checked; an empty selection is an error (it would push nothing)."""
    chosen = frozenset(name.strip() for name in names if name.strip())
    unknown = sorted(chosen - ALL_CONCERNS)
    if unknown:
        raise ConcernError(f"unknown concern(s) {', '.join(unknown)}; known: {', '.join(CONCERNS)}")
    if not chosen:
        raise ConcernError(f"no concern chosen; known: {', '.join(CONCERNS)}")
    return chosen


def concerns_from_tags(run_tags: Iterable[str]) -> list[str]:
    """The concerns `ansible-playbook --tags` selects, in CONCERNS order.

    No tag, `all` or `switch` selects every concern; otherwise the tags that name concerns do.
    """
    tags = set(run_tags)
    named = [concern for concern in CONCERNS if concern in tags]
    if not named or tags & set(WHOLE_SWITCH_TAGS):
        return list(CONCERNS)
    return named


def describe(concerns: Iterable[str]) -> str:
    """'every concern' or 'pfc, ecn' (for messages and diffs)."""
    chosen = frozenset(concerns)
    return "every concern" if chosen >= ALL_CONCERNS else ", ".join(c for c in CONCERNS if c in chosen)
