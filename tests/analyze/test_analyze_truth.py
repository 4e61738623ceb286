"""`fabcheck analyze --json` reports the exact truth facts for every recorded sample of the four kinds.

A truth verdict is `pass` only when every applicable check judged evidence: a check that found none is
`error` ("not judged"), never a pass (tests/data/corpus/truth/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import corpus_samples, corpus_truth

from fabcheck.analyze import analyze
from fabcheck.errors import ParseError
from fabcheck.intent.model import default_intent

KINDS = ("topo", "nccl-log", "perftest", "nccl-tests")
SAMPLES = [(kind, path) for kind in KINDS for path in corpus_samples(kind)]
REPO = Path(__file__).resolve().parents[2]


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


@pytest.mark.parametrize(("kind", "path"), SAMPLES, ids=[f"{k}/{p.stem}" for k, p in SAMPLES])
def test_sample_facts_match_truth(kind: str, path: Path) -> None:
    truth = corpus_truth(path)
    assert truth is not None, f"no truth for {path.name}"
    expected = {k: v for k, v in truth.items() if k not in ("kind", "note", "verdict_reason")}
    assert truth["verdict"] in ("pass", "fail", "error") and truth["verdict_reason"].strip()
    if expected.pop("parse_error", False):
        # An unreadable sample is reported as verdict "error" (analyze exits 2), never judged.
        assert truth["verdict"] == "error"
        with pytest.raises(ParseError) as err:
            analyze(kind, lines_of(path), path.name, default_intent())
        assert err.value.line is not None
        return
    result = analyze(kind, lines_of(path), path.name, default_intent()).to_json()
    assert result["kind"] == truth["kind"]
    # The verdict against the default intent is pinned by what a careful human reads in the sample.
    assert {k: result[k] for k in expected} == expected
    assert result["findings"], "every analysis reports at least one finding"


def test_truth_verdicts_cover_every_outcome() -> None:
    verdicts = [corpus_truth(path)["verdict"] for _, path in SAMPLES]  # type: ignore[index]
    assert {v: verdicts.count(v) for v in ("pass", "fail", "error")} == {"pass": 14, "fail": 42, "error": 8}


def test_every_truth_file_has_a_sample() -> None:
    truths = sorted((REPO / "tests/data/corpus/truth").glob("*/*.json"))
    assert len(truths) == len(SAMPLES) == 64
    for truth in truths:
        assert (REPO / "tests/data/corpus" / truth.parent.name / (truth.stem + ".txt")).exists()


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "analyze", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        input=stdin,
    )


def test_cli_json_one_object_per_file_and_exit_codes() -> None:
    good = "examples/outputs/ib_write_bw-roce-400g.txt"
    bad = "examples/outputs/ib_send_bw-mtu1024.txt"
    result = run_cli("perftest", good, bad, "--json")
    assert result.returncode == 1  # one file fails
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["file"] for o in objects] == [good, bad]
    assert [o["verdict"] for o in objects] == ["pass", "fail"]
    mtu = next(f for f in objects[1]["findings"] if f["check"] == "perftest.mtu")
    assert (mtu["status"], mtu["expected"], mtu["actual"]) == ("fail", "MTU 4096", "MTU 1024")
    assert "roce_host" in mtu["hint"]
    assert run_cli("perftest", good).returncode == 0


def test_cli_unreadable_input_exits_2_without_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nthis is not a topology\n")
    result = run_cli("topo", str(junk))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "junk.txt" in result.stderr
    missing = run_cli("topo", str(tmp_path / "missing.txt"))
    assert missing.returncode == 2 and "cannot open" in missing.stderr
    damaged = run_cli("topo", "tests/data/corpus/topo/tpgds-0008-12nic-CORRUPTED-missing-tabs.txt", "--json")
    assert damaged.returncode == 2
    report = json.loads(damaged.stdout)
    assert (report["verdict"], report["parse_error"], report["line"]) == ("error", True, 7)
    assert "tpgds-0008-12nic-CORRUPTED-missing-tabs.txt:" in damaged.stderr


def test_cli_reads_standard_input_and_uses_inventory_rails() -> None:
    text = (REPO / "examples/outputs/topo-dgxa100.txt").read_text()
    result = run_cli("topo", "-", "-i", "inventory/example", "--host", "gpu01", "--json", stdin=text)
    data = json.loads(result.stdout)
    # The example rails map GPUn -> mlx5_n; on this DGX A100 each such pair is PXB, the allowed worst.
    assert {f["subject"]: f["status"] for f in data["findings"]} == {f"GPU{i}": "pass" for i in range(8)}
    assert result.returncode == 0
    all_sys = run_cli(
        "topo", "examples/outputs/topo-pcie-all-sys.txt", "-i", "inventory/example", "--host", "gpu01"
    )
    assert all_sys.returncode == 1
    assert "GPU0 -> mlx5_0 SYS" in all_sys.stdout
