"""fabcheck.collect.script: the section splitter of the one-round-trip collection keeps each section's
stdout exact with its exit code and stderr, knows a truncated run, and reads only its own token's markers."""

from __future__ import annotations

from fabcheck.collect.script import Section, split_sections
from tests.checks.host.hostdata import TOKEN


def marked(name: str, stdout: str, rc: int, stderr: str = "", token: str = TOKEN) -> str:
    return (
        f"<<<fabcheck {token} begin {name}>>>\n{stdout}\n<<<fabcheck {token} stderr {name}>>>\n{stderr}\n"
        f"<<<fabcheck {token} end {name} rc={rc}>>>\n"
    )


def test_split_sections_keeps_stdout_exact_with_rc_and_stderr() -> None:
    text = (
        "motd banner line\n"
        + marked("topo", "a\tb\n", 0)
        + marked("mtu:ens1np0", "no newline at end", 0)
        + marked("lsmod", "", 127, "sh: 1: lsmod: not found\n")
        + f"<<<fabcheck {TOKEN} complete>>>\n"
    )
    parsed = split_sections(text, TOKEN)
    assert parsed.complete
    assert parsed.sections == {
        "topo": Section(0, "a\tb\n", ""),
        "mtu:ens1np0": Section(0, "no newline at end", ""),
        "lsmod": Section(127, "", "sh: 1: lsmod: not found\n"),
    }


def test_split_sections_truncated_output() -> None:
    text = marked("topo", "x\n", 0) + f"<<<fabcheck {TOKEN} begin lsmod>>>\nModule  Size  Used by\nmlx5"
    parsed = split_sections(text, TOKEN)
    assert not parsed.complete
    assert parsed.sections["topo"] == Section(0, "x\n", "")
    assert parsed.sections["lsmod"].rc is None
    assert parsed.sections["lsmod"].stdout.startswith("Module")
    cut_mid_marker = marked("topo", "x\n", 0)[:-10]
    assert split_sections(cut_mid_marker, TOKEN).sections["topo"].rc is None


def test_split_sections_ignores_markers_of_another_token() -> None:
    forged = marked("lsmod", "nvidia_peermem 1 0", 0, token="ffff0000")
    text = marked("topo", forged.rstrip("\n"), 0) + f"<<<fabcheck {TOKEN} complete>>>\n"
    parsed = split_sections(text, TOKEN)
    assert set(parsed.sections) == {"topo"}
    assert parsed.sections["topo"].stdout == forged.rstrip("\n")


def test_split_sections_complete_marker_inside_a_section_is_not_completion() -> None:
    text = f"<<<fabcheck {TOKEN} begin topo>>>\nx\n<<<fabcheck {TOKEN} complete>>>\n"
    parsed = split_sections(text, TOKEN)
    assert not parsed.complete and parsed.sections["topo"].rc is None
