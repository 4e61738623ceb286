"""The collection script's file reads: a scope's `cat FILE` probes come from one bounded grep.

Each case runs the generated script under the local /bin/sh on a small probe table whose files live in
tmp_path, and compares it with the same probes read one `cat` at a time (a table of one file per scope
is never batched), so "the same text as a cat per file" is checked against cat itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect.host import HostProbe, Section, collection_script, split_sections

TOKEN = "0123456789abcdef"
TOOLS = ("timeout", "mktemp", "cat", "rm", "grep")


def _bin(tmp_path: Path, tools: tuple[str, ...] = TOOLS) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def _file_probes(files: dict[str, Path]) -> list[HostProbe]:
    return [HostProbe(name, "host", ("cat", str(path)), str) for name, path in files.items()]


def _sections(probes: list[HostProbe], bin_dir: Path, limit: str = "10") -> dict[str, Section]:
    done = subprocess.run(
        ["/bin/sh", "-c", collection_script(probes), "fabcheck-collect", TOKEN, "3", limit],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(bin_dir)},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete, done.stderr
    return {name: section for name, section in parsed.sections.items() if name.startswith("f_")}


def _one_cat_each(probes: list[HostProbe], bin_dir: Path) -> dict[str, Section]:
    """The reference: every probe alone in its table, so the script runs `cat FILE` for it."""
    return {name: section for probe in probes for name, section in _sections([probe], bin_dir).items()}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "sys"
    folder.mkdir()
    contents = {
        "f_int": "9000\n",
        "f_no_newline": "Global tclass=106",
        "f_lines": "line one\n  two\\n $(id) `id` *\n\nlast\n",
        "f_empty": "",
    }
    paths = {name: folder / name for name in contents}
    for name, text in contents.items():
        paths[name].write_text(text)
    paths["f_missing"] = folder / "missing"
    paths["f_folder"] = tmp_path
    # A line that looks like grep's prefix for another file stays with the file it came from.
    paths["f_forger"] = folder / "forger"
    paths["f_forger"].write_text(f"{paths['f_int']}:1\n{paths['f_missing']}: No such file or directory\n")
    return paths


def test_the_real_script_reads_each_netdev_sysfs_file_in_one_batch() -> None:
    netdev_files = [p for p in collect.HOST_PROBES if p.scope == "netdev" and p.reads_one_file]
    batches = [line.strip() for line in collect.COLLECT_SCRIPT.splitlines() if "read_files " in line]
    assert len(netdev_files) >= 2 and len(batches) == 1  # the port and host scopes read one file each
    words = [f'"{p.argv[1].format(netdev="$netdev", priority="$prio")}"' for p in netdev_files]
    assert batches[0].split()[1:] == words


def test_a_batch_shows_what_a_cat_per_file_shows(tmp_path: Path, files: dict[str, Path]) -> None:
    bin_dir = _bin(tmp_path)
    probes = _file_probes(files)
    batched, reference = _sections(probes, bin_dir), _one_cat_each(probes, bin_dir)
    assert set(batched) == set(reference) == set(files)
    for name, cat in reference.items():
        got = batched[name]
        # grep ends every line with a newline: a last line without one (never in sysfs) gains it.
        expected = cat.stdout if cat.stdout.endswith("\n") or not cat.stdout else cat.stdout + "\n"
        assert (got.rc, got.stdout) == (cat.rc, expected), name
        # cat says "cat: FILE: reason"; the batch says "FILE: reason" (grep read it, not cat).
        assert got.stderr == cat.stderr.removeprefix("cat: "), name
    assert batched["f_int"] == Section(0, "9000\n", "")
    assert batched["f_missing"].rc == 1 and "No such file" in batched["f_missing"].stderr
    assert batched["f_folder"].rc == 1 and batched["f_forger"].rc == 0


def test_without_grep_every_batched_file_fails_and_says_why(tmp_path: Path, files: dict[str, Path]) -> None:
    bin_dir = _bin(tmp_path, tuple(tool for tool in TOOLS if tool != "grep"))
    sections = _sections(_file_probes(files), bin_dir)
    assert set(sections) == set(files)
    assert {section.rc for section in sections.values()} == {127}
    assert all("grep" in section.stderr for section in sections.values())


def test_a_hung_batch_is_stopped_and_every_file_in_it_fails(tmp_path: Path, files: dict[str, Path]) -> None:
    bin_dir = _bin(tmp_path, tuple(tool for tool in TOOLS if tool != "grep"))
    (bin_dir / "grep").write_text("#!/bin/sh\nexec sleep 30\n")
    (bin_dir / "grep").chmod(0o755)
    os.symlink(shutil.which("sleep") or "/bin/sleep", bin_dir / "sleep")
    sections = _sections(_file_probes(files), bin_dir, limit="1")
    assert {section.rc for section in sections.values()} == {124}
    assert all("stopped after 1 s" in section.stderr for section in sections.values())


def test_without_a_stderr_file_each_file_gets_its_own_cat(tmp_path: Path, files: dict[str, Path]) -> None:
    """No mktemp: a failed file could not be told from an empty one in a batch, so none is made."""
    bin_dir = _bin(tmp_path, tuple(tool for tool in TOOLS if tool != "mktemp"))
    sections = _sections(_file_probes(files), bin_dir)
    assert sections["f_int"] == Section(0, "9000\n", "")
    assert sections["f_missing"].rc == 1 and sections["f_empty"] == Section(0, "", "")


@pytest.mark.parametrize("argv", [("cat", "/a:b"), ("cat", "/a", "/b"), ("head", "/a")])
def test_only_a_cat_of_one_file_without_a_colon_joins_a_batch(argv: tuple[str, ...]) -> None:
    assert not HostProbe("x", "host", argv, str).reads_one_file
    assert HostProbe("x", "host", ("cat", "/sys/class/net/{netdev}/mtu"), str).reads_one_file
