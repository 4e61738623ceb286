"""The collection script's file reads: the `cat FILE` probes of an `rdma link` line come from one
bounded grep.

Each case runs the generated script under the local /bin/sh, with a fake `rdma` listing one port, on a
small table of port probes whose files live in tmp_path. It compares them with the same probes read one
`cat` at a time (a table of one file is never batched), so "the same text as a cat per file" is checked
against cat itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect.host import collection_script
from fabcheck.collect.script import HostProbe, Section, split_sections

TOKEN = "0123456789abcdef"
TOOLS = ("timeout", "mktemp", "cat", "rm", "grep")


PORT = "mlx5_0/1"


def _bin(tmp_path: Path, tools: tuple[str, ...] = TOOLS) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "rdma").write_text(f"#!/bin/sh\necho 'link {PORT} state ACTIVE physical_state LINK_UP'\n")
    (bin_dir / "rdma").chmod(0o755)
    for tool in tools:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def _file_probes(files: dict[str, Path]) -> list[HostProbe]:
    return [HostProbe(name, "port", ("cat", str(path)), str) for name, path in files.items()]


def _sections(probes: list[HostProbe], bin_dir: Path, limit: str = "10") -> dict[str, Section]:
    done = subprocess.run(
        ["/bin/sh", "-c", collection_script(probes), "fabcheck-collect", TOKEN, "3", limit, "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(bin_dir)},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete, done.stderr
    suffix = f":{PORT}"
    return {name.removesuffix(suffix): got for name, got in parsed.sections.items() if name.endswith(suffix)}


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
        "f_empty_line": "\n",
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


def test_the_real_script_reads_the_sysfs_files_of_each_link_in_one_batch() -> None:
    files = [
        p
        for scope in ("port", "netdev")
        for p in collect.HOST_PROBES
        if p.scope == scope and p.reads_one_file
    ]
    batches = [line.split()[1:] for line in collect.COLLECT_SCRIPT.splitlines() if "read_files " in line]
    values = {"dev": "$dev", "port": "$port", "netdev": "$netdev", "priority": "$prio"}
    words = [f'"{p.argv[1].format(**values)}"' for p in files]
    ports = sum(p.scope == "port" for p in files)
    # Both files of the port and of its netdev; the port's alone when the netdev's name is not plain.
    assert len(files) >= 2 and batches == [words, words[:ports]]
    host_files = [f'"{p.argv[1]}"' for p in collect.HOST_PROBES if p.scope == "host" and p.reads_one_file]
    assert not [word for batch in batches for word in batch if word in host_files]  # a host file: its own cat


def test_a_batch_shows_what_a_cat_per_file_shows(tmp_path: Path, files: dict[str, Path]) -> None:
    bin_dir = _bin(tmp_path)
    probes = _file_probes(files)
    assert "read_files " in collection_script(probes) and "read_files " not in collection_script(probes[:1])
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
