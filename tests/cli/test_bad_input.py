"""Every command given input it cannot use: exit 2, one line `fabcheck: FILE[:LINE]: why; expected what`."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fabcheck.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "outputs"
KINDS = ("topo", "nccl-log", "perftest", "nccl-tests")
# A sample of another kind, per kind: the wrong kind of output.
WRONG_KIND = {
    "topo": EXAMPLES / "nccl-log-roce-gdr.txt",
    "nccl-log": EXAMPLES / "topo-dgxa100.txt",
    "perftest": EXAMPLES / "all_reduce-2node-h100.txt",
    "nccl-tests": EXAMPLES / "ib_write_bw-roce-400g.txt",
}
GOOD_SAMPLE = {
    "topo": EXAMPLES / "topo-dgxa100.txt",
    "nccl-log": EXAMPLES / "nccl-log-roce-gdr.txt",
    "perftest": EXAMPLES / "ib_write_bw-roce-400g.txt",
    "nccl-tests": EXAMPLES / "all_reduce-2node-h100.txt",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, *names: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fabcheck: ") and "Traceback" not in err
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert "expected" in lines[0]
    return lines[0]


# ---- bad inventories: the same for every command that reads one ----------------------------------


def _missing(tmp: Path) -> tuple[Path, str]:
    return tmp / "no-such-inventory", "no such file or directory"


def _empty_file(tmp: Path) -> tuple[Path, str]:
    (tmp / "hosts.yml").write_text("")
    return tmp / "hosts.yml", "file is empty"


def _empty_folder(tmp: Path) -> tuple[Path, str]:
    (tmp / "inv").mkdir()
    return tmp / "inv", "the inventory has no hosts and no variable fabric_intent"


def _empty_hosts_in_folder(tmp: Path) -> tuple[Path, str]:
    (tmp / "inv").mkdir()
    (tmp / "inv" / "hosts.yml").write_text("")
    return tmp / "inv", "the inventory has no hosts"


def _random_bytes(tmp: Path) -> tuple[Path, str]:
    (tmp / "hosts").write_bytes(bytes((i * 151 + 7) % 256 for i in range(4096)))
    return tmp / "hosts", "binary data, not text"


def _wrong_output(tmp: Path) -> tuple[Path, str]:
    return EXAMPLES / "topo-dgxa100.txt", "not an inventory ansible can parse"


def _group_vars_yaml_error(tmp: Path) -> tuple[Path, str]:
    (tmp / "inv" / "group_vars" / "all").mkdir(parents=True)
    (tmp / "inv" / "group_vars" / "all" / "fabric.yml").write_text(
        "fabric_intent:\n  kind: roce\n   bad: [\n"
    )
    (tmp / "inv" / "hosts.yml").write_text(
        "all:\n  children:\n    gpu_hosts:\n      hosts:\n        h1: {}\n"
    )
    return tmp / "inv", "group_vars/all/fabric.yml:3: YAML syntax error"


def _hosts_yaml_error(tmp: Path) -> tuple[Path, str]:
    (tmp / "inv" / "group_vars" / "all").mkdir(parents=True)
    (tmp / "inv" / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (tmp / "inv" / "hosts.yml").write_text("all:\n  hosts: [\n   h1: {\n")
    return tmp / "inv", "hosts.yml:4: YAML syntax error"


BAD_INVENTORIES: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "missing": _missing,
    "empty-file": _empty_file,
    "empty-folder": _empty_folder,
    "empty-hosts-file": _empty_hosts_in_folder,
    "random-bytes": _random_bytes,
    "wrong-output": _wrong_output,
    "group-vars-yaml-error": _group_vars_yaml_error,
    "hosts-yaml-error": _hosts_yaml_error,
}
INVENTORY_COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "intent-check": lambda inv: ["intent", "check", "-i", inv],
    "intent-show": lambda inv: ["intent", "show", "-i", inv],
    "analyze-i": lambda inv: ["analyze", "topo", str(GOOD_SAMPLE["topo"]), "-i", inv],
    "validate-i": lambda inv: ["validate", "-i", inv],
}


@pytest.mark.parametrize("command", sorted(INVENTORY_COMMANDS))
@pytest.mark.parametrize("case", sorted(BAD_INVENTORIES))
def test_bad_inventory_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str
) -> None:
    source, why = BAD_INVENTORIES[case](tmp_path)
    code, out, err = run(capsys, *INVENTORY_COMMANDS[command](str(source)))
    assert code == 2, (out, err)
    line = one_error_line(err, str(source), why)
    assert "fabcheck-intent-probe" not in line
    assert out == ""


# ---- bad output files for analyze ----------------------------------------------------------------


def _bad_file(tmp: Path, case: str, kind: str) -> tuple[Path, str]:
    if case == "missing":
        return tmp / "absent.txt", "cannot open: No such file or directory"
    if case == "empty":
        (tmp / "empty.txt").write_text("")
        return tmp / "empty.txt", f"cannot read it as {kind}"
    if case == "directory":
        return tmp, "is a directory"
    if case == "random-bytes":
        (tmp / "core").write_bytes(bytes((i * 151 + 7) % 256 for i in range(8192)))
        return tmp / "core", "binary data, not text"
    return WRONG_KIND[kind], f"cannot read it as {kind}"


@pytest.mark.parametrize("with_inventory", [False, True])
@pytest.mark.parametrize("case", ["missing", "empty", "directory", "random-bytes", "wrong-kind"])
@pytest.mark.parametrize("kind", KINDS)
def test_analyze_unreadable_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, case: str, with_inventory: bool
) -> None:
    path, why = _bad_file(tmp_path, case, kind)
    argv = ["analyze", kind, str(path)] + (["-i", str(REPO / "inventory/example")] if with_inventory else [])
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    line = one_error_line(err, why)
    assert line.count(str(path)) == 1, line  # the path once, not twice
    assert line.startswith(f"fabcheck: {path}")


def test_analyze_keeps_file_order_with_one_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = str(GOOD_SAMPLE["topo"])
    code, out, err = run(capsys, "analyze", "topo", good, str(tmp_path), good, "--json")
    assert code == 2
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["file"] for r in records] == [good, str(tmp_path), good]
    assert records[1]["parse_error"] is True and "is a directory" in records[1]["error"]
    one_error_line(err, str(tmp_path))


def test_parse_error_names_the_line_after_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A damaged matrix: the header is there, a row is cut short.
    lines = GOOD_SAMPLE["topo"].read_text().splitlines()
    damaged = tmp_path / "topo.txt"
    damaged.write_text("\n".join([lines[0], lines[1][:12], *lines[2:]]) + "\n")
    code, out, err = run(capsys, "analyze", "topo", str(damaged), "--json")
    record = json.loads(out)
    if record.get("line") is None:
        pytest.fail(f"a damaged matrix must be a parse error with a line: {record}")
    assert code == 2
    assert one_error_line(err).startswith(f"fabcheck: {damaged}:{record['line']}: cannot read it as topo: ")


@pytest.mark.parametrize("rate", ["0", "-100", "nan", "inf", "fast"])
def test_line_rate_must_be_a_positive_number(capsys: pytest.CaptureFixture[str], rate: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["analyze", "perftest", str(GOOD_SAMPLE["perftest"]), f"--line-rate-gbps={rate}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --line-rate-gbps" in err and "expected Gb/s above 0" in err


def test_line_rate_above_zero_is_used(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "perftest", str(GOOD_SAMPLE["perftest"]), "--line-rate-gbps", "400")
    assert code == 0, out


def test_group_vars_yaml_error_has_no_traceback_in_a_real_process(tmp_path: Path) -> None:
    source, _ = _group_vars_yaml_error(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "intent", "check", "-i", str(source)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"fabcheck: {source}/group_vars/all/fabric.yml:3: YAML syntax error: Mapping values are not allowed "
        "in this context; expected valid YAML (check indentation, colons and brackets)"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["intent", "show", "-i", str(REPO / "inventory/example"), "--host", "gpu99"],
        [
            "analyze",
            "topo",
            str(GOOD_SAMPLE["topo"]),
            "-i",
            str(REPO / "inventory/example"),
            "--host",
            "gpu99",
        ],
    ],
)
def test_unknown_host_names_the_inventory_and_its_hosts(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    line = one_error_line(err, str(REPO / "inventory/example"), "'gpu99'")
    assert line.endswith("expected one of its hosts: gpu01, gpu02, gpu03, gpu04, leaf01, leaf02")


def test_host_without_inventory_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", "topo", str(GOOD_SAMPLE["topo"]), "--host", "gpu01")
    assert code == 2
    one_error_line(err, "--host needs an inventory")


@pytest.mark.parametrize(("stdin", "expected"), [(b"\xff\xfe\x00garbage" * 500, "binary data, not text")])
def test_binary_standard_input_is_one_line_even_with_strict_decoding(stdin: bytes, expected: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "analyze", "topo", "-"],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert result.returncode == 2
    assert result.stderr.decode().strip().splitlines() == [
        f"fabcheck: -: {expected}; expected the output of `nvidia-smi topo -m`"
    ]


def test_text_standard_input_is_analyzed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(GOOD_SAMPLE["nccl-log"].read_text()))
    code, out, _ = run(capsys, "analyze", "nccl-log", "-")
    assert code == 0 and out.startswith("PASS  - (nccl-log)")


# ---- inputs that gave tracebacks or blocked (issue 28) --------------------------------------------


def test_a_binary_baseline_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "perftest-baseline.json"
    baseline.write_bytes(b"\x00\x01\xff\xfe" * 64)
    code, out, err = run(capsys, "baseline", "show", "--file", str(baseline))
    assert code == 2 and out == ""
    one_error_line(err, str(baseline), "binary data, not text")


def test_deeply_nested_snapshot_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "snapshot.json").write_text("[" * 200_000 + "]" * 200_000)
    argv = ["validate", "-i", str(REPO / "inventory/example"), "--from-snapshot", str(tmp_path / "snap")]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    one_error_line(err, str(tmp_path / "snap" / "snapshot.json"), "nested too deep")


def _without_root_reading_everything(argv: list[str]) -> list[str]:
    """argv run so that file permissions apply: root keeps them only without CAP_DAC_*."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("setpriv") is None:
        pytest.skip("root needs setpriv (util-linux) to read files as their permissions say")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *argv]


def test_an_unreadable_group_vars_file_is_one_line(tmp_path: Path) -> None:
    source, _ = _group_vars_yaml_error(tmp_path)
    unreadable = source / "group_vars" / "all" / "fabric.yml"
    unreadable.write_text("fabric_intent: {}\n")
    unreadable.chmod(0)
    argv = [sys.executable, "-m", "fabcheck.cli", "intent", "check", "-i", str(source)]
    result = subprocess.run(
        _without_root_reading_everything(argv), capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        f"fabcheck: {unreadable}: cannot read: Permission denied; expected a readable file of YAML variables"
    ]


@pytest.mark.parametrize("kind", ["nccl-log", "counters"])
def test_analyze_refuses_a_fifo_instead_of_waiting_on_it(tmp_path: Path, kind: str) -> None:
    fifo = tmp_path / "job.log"
    os.mkfifo(fifo)
    files = [str(fifo)] if kind != "counters" else [str(fifo), str(fifo)]
    argv = [sys.executable, "-m", "fabcheck.cli", "analyze", kind, *files]
    # Nothing ever writes to the FIFO: a reader that opened it would wait until the timeout.
    result = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2
    line = one_error_line(result.stderr, str(fifo), "is a FIFO (named pipe), not a regular file")
    assert "give '-' as FILE" in line


def test_core_dumps_are_off_for_the_cli_and_what_it_starts() -> None:
    script = (
        "import resource, subprocess, sys\n"
        "from fabcheck.cli import main\n"
        "main(['intent', 'check', '-i', 'inventory/example'])\n"
        "child = subprocess.run(['sh', '-c', 'ulimit -c; ulimit -Hc'], capture_output=True, text=True)\n"
        "print(resource.getrlimit(resource.RLIMIT_CORE), child.stdout.split())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "(0, 0) ['0', '0']"


@pytest.mark.parametrize("window", ["-1", "5s", "2.5", "601", ""])
def test_a_bad_counter_window_is_one_clear_usage_error(
    capsys: pytest.CaptureFixture[str], window: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "-i", "inventory/lab", f"--counter-window={window}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --counter-window" in err and "expected whole seconds 0..600" in err


def test_the_counter_window_defaults_to_five_seconds_and_zero_is_allowed() -> None:
    from fabcheck.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["validate", "-i", "x"]).counter_window == 5
    assert parser.parse_args(["validate", "-i", "x", "--counter-window", "0"]).counter_window == 0
    assert parser.parse_args(["nccl", "-i", "x", "--counter-window", "12"]).counter_window == 12
