"""Slurm hostlist expressions as Slurm reads them (SchedMD/slurm:src/common/hostlist.c@
284c3b95f08a2dc2478499837b03355e1b9c5c75: the suffix is the trailing digits, a bracketed range takes the
width of its low end) and the man page's examples (doc/man/man5/topology.conf.5 at that commit)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabcheck.report.hostlist import compress, expand


@pytest.mark.parametrize(
    ("names", "written"),
    [
        (["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"], "gpu[01-04,07]"),
        (["gpu9", "gpu10", "gpu11"], "gpu[9-11]"),  # unpadded: one width reads them all back
        (["gpu09", "gpu10"], "gpu[09-10]"),
        (["n1", "n01", "n2"], "n[1,01,2]"),  # n1 and n01 are two names: each range keeps its width
        (["leaf-02", "leaf-01", "spine1"], "leaf-[01-02],spine1"),
        (["gpu01"], "gpu01"),  # one host: no brackets, as Slurm prints it
        (["login", "gpu1", "gpu2"], "gpu[1-2],login"),
        (["gpu01a", "gpu02a"], "gpu01a,gpu02a"),  # no trailing digits: each name stands alone
        (["gpu02", "gpu02"], "gpu02"),
    ],
)
def test_compress_writes_ranges_slurm_reads_back(names: list[str], written: str) -> None:
    assert compress(names) == written
    assert sorted(expand(written)) == sorted(set(names))


def test_the_man_pages_examples_expand_as_slurm_reads_them() -> None:
    assert expand("tux[0-3,12,18-20]") == ["tux0", "tux1", "tux2", "tux3", "tux12", "tux18", "tux19", "tux20"]
    assert expand("s[0-2,4-8,12]") == [f"s{n}" for n in (0, 1, 2, 4, 5, 6, 7, 8, 12)]
    assert expand("dev[0-5]") == [f"dev{n}" for n in range(6)]


@pytest.mark.parametrize("name", ["gpu 01", "gpu,01", "gpu[01]", "gpu=1", "#gpu", ""])
def test_a_name_that_cannot_stand_in_a_hostlist_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="cannot stand in a Slurm hostlist"):
        compress(["gpu02", name])


@pytest.mark.parametrize("text", ["gpu[3-1]", "gpu[a-b]", "gpu[01", "gpu[1-2]x"])
def test_expand_refuses_what_is_not_a_hostlist(text: str) -> None:
    with pytest.raises(ValueError):
        expand(text)


NAMES = st.builds(
    lambda prefix, number, width: f"{prefix}{number:0{width}d}" if width else prefix or "x",
    st.sampled_from(["gpu", "node-", "a.b_", "", "leaf"]),
    st.integers(min_value=0, max_value=1200),
    st.integers(min_value=0, max_value=4),
)


@given(st.lists(NAMES, max_size=40))
def test_every_set_of_names_reads_back_unchanged(names: list[str]) -> None:
    assert sorted(expand(compress(names))) == sorted(set(names))
