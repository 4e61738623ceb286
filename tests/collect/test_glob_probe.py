"""A glob probe (HostProbe.glob): the AER counters of every PCI function are read by one grep over
`/sys/bus/pci/devices/*/aer_dev_*`, its patterns expanded on the host although the script runs under
`set -f`. Run under the local /bin/sh on files in tmp_path (a fake `rdma` lists one port)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect.host import collection_script, read_section, section_command
from fabcheck.collect.script import HostProbe, Section, split_sections
from fabcheck.parsers.pcie_sysfs import aer_answer

TOKEN = "0123456789abcdef"


def _run(probes: list[HostProbe], tmp_path: Path) -> dict[str, Section]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rdma").write_text("#!/bin/sh\necho 'link mlx5_0/1 state ACTIVE physical_state LINK_UP'\n")
    (bin_dir / "rdma").chmod(0o755)
    for tool in ("timeout", "mktemp", "cat", "rm", "grep", "sleep", "date"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    done = subprocess.run(
        ["/bin/sh", "-c", collection_script(probes), "fabcheck-collect", TOKEN, "3", "10", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(bin_dir)},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete, done.stderr
    return dict(parsed.sections)


def _aer_probe(root: Path) -> HostProbe:
    files = tuple(f"{root}/*/aer_dev_{severity}" for severity in ("correctable", "fatal"))
    return HostProbe("aer", "host", ("grep", "-H", "", *files), aer_answer, "answer", counter=True, glob=True)


def test_the_patterns_are_expanded_on_the_host_and_globbing_is_off_again(tmp_path: Path) -> None:
    root = tmp_path / "devices"
    for bdf, count in (("0000:18:00.0", 0), ("0000:1a:00.0", 5)):
        (root / bdf).mkdir(parents=True)
        (root / bdf / "aer_dev_correctable").write_text(f"RxErr {count}\nTOTAL_ERR_COR {count}\n")
        (root / bdf / "aer_dev_fatal").write_text("DLP 0\nTOTAL_ERR_FATAL 0\n")
    sections = _run([_aer_probe(root)], tmp_path)
    counts = aer_answer(sections["aer"].rc or 0, sections["aer"].stdout, sections["aer"].stderr, "grep")
    assert {bdf: aer.total("correctable") for bdf, aer in counts.items()} == {
        "0000:18:00.0": 0,
        "0000:1a:00.0": 5,
    }
    assert 'set +f\nsection "aer"' in collection_script([_aer_probe(root)])
    assert "aer_dev_fatal\nset -f\n" in collection_script([_aer_probe(root)])  # globbing off again


def test_a_pattern_that_matches_nothing_is_the_answer_no_aer_counters(tmp_path: Path) -> None:
    (tmp_path / "devices").mkdir()
    sections = _run([_aer_probe(tmp_path / "devices")], tmp_path)
    section = sections["aer"]
    assert section.rc == 2
    assert aer_answer(section.rc, section.stdout, section.stderr, "grep") == {}


def test_the_real_aer_probe_is_a_counter_glob_over_every_function() -> None:
    probe = collect.PROBES_BY_NAME[collect.AER]
    assert probe.glob and probe.counter and probe.scope == "host"
    script = collect.COLLECT_SCRIPT
    assert 'set +f\nsection "aer" "grep" "-H" "" /sys/bus/pci/devices/*/aer_dev_correctable' in script
    assert script.count("set +f") == script.count("set -f") - 1  # the prologue's set -f, then pairs
    assert section_command("aer", 3) == "grep -H '' " + " ".join(collect.AER_FILES)
    missing = read_section(probe, {}, "", 3)
    assert getattr(missing, "reason", "") == "not in the collected output"


@pytest.mark.parametrize("word", ["/sys/*/a b", "/sys/$(x)/*", "/sys/?/*", "/sys/{dev}/*"])
def test_a_pattern_with_anything_but_literal_text_and_star_is_refused(word: str) -> None:
    with pytest.raises(ValueError, match="pattern"):
        collection_script([HostProbe("bad", "host", ("cat", word), str, glob=True)])
