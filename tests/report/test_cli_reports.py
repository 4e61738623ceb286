"""Both CLIs: the one exit-code policy (0 pass, 1 fail, 2 bad input, 3 could not check), the report
files they write, the progress bar on a terminal, and validate's GPU-NIC picture from the collection."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fabcheck.checks.model import passed
from fabcheck.cli import main
from fabcheck.collect import host as collect
from fabcheck.collect.backends import native
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.gate import host_stage as validate
from fabcheck.report.palette import SOLID

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "outputs"
GOOD_TOPO = EXAMPLES / "topo-dgxa100.txt"
ALL_SYS_TOPO = EXAMPLES / "topo-pcie-all-sys.txt"
UNDECIDED_LOG = REPO / "tests/data/corpus/nccl-log/sglang-2node-roce-ofi-plugin-fails-then-ib-excerpt.txt"

# Two GPU hosts on a loopback port where nothing listens (INI inventory); the tests fake the collector.
HOSTS_INI = """\
[gpu_hosts]
gpu01
gpu02

[all:vars]
ansible_host=127.0.0.1
ansible_port=1
ansible_ssh_common_args='-F /dev/null'
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- analyze ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "files", "code"),
    [
        ("topo", [GOOD_TOPO], 0),
        ("topo", [GOOD_TOPO, ALL_SYS_TOPO], 1),
        ("nccl-log", [UNDECIDED_LOG], 3),  # was 1 before the shared policy: undecided is not a failure
        ("topo", [GOOD_TOPO, EXAMPLES / "nccl-log-roce-gdr.txt"], 2),
        ("topo", [ALL_SYS_TOPO, EXAMPLES / "nccl-log-roce-gdr.txt"], 2),
    ],
)
def test_analyze_exit_codes(
    capsys: pytest.CaptureFixture[str], kind: str, files: list[Path], code: int
) -> None:
    assert UNDECIDED_LOG.is_file()
    got, out, err = run(capsys, "analyze", kind, *map(str, files))
    assert got == code, (out, err)


def test_analyze_writes_every_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = {
        flag: tmp_path / f"report.{ext}"
        for flag, ext in (("--junit-xml", "xml"), ("--markdown", "md"), ("--html", "html"))
    }
    argv = ["analyze", "topo", str(GOOD_TOPO), str(ALL_SYS_TOPO), "--group-by", "check"]
    for flag, path in paths.items():
        argv += [flag, str(path)]
    code, out, _ = run(capsys, *argv)
    assert code == 1
    assert out.splitlines()[0] == "FAIL  topo.gpu_nic_affinity"
    suites = ET.parse(paths["--junit-xml"]).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [str(GOOD_TOPO), str(ALL_SYS_TOPO)]
    assert suites[1].get("failures") != "0" and suites[0].get("failures") == "0"
    assert paths["--markdown"].read_text().startswith("# fabcheck analyze: FAIL\n")
    assert "<h1>fabcheck analyze" in paths["--html"].read_text()


def test_analyze_report_into_a_missing_directory_is_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "analyze", "topo", str(GOOD_TOPO), "--html", str(tmp_path / "no" / "r.html"))
    assert code == 2 and out == ""
    missing = tmp_path / "no"
    expected = f"--html {missing / 'r.html'}: no directory {missing}; expected a file in an existing one"
    assert err.strip() == f"fabcheck: {expected}"


# ---- validate ---------------------------------------------------------------------------------------


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    root = tmp_path / "inventory"
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (root / "hosts.ini").write_text(HOSTS_INI)
    return root


def fake_collector(monkeypatch: pytest.MonkeyPatch, topo_of: dict[str, Path | None]) -> list[str]:
    """Every host answers with its topology only (None: unreachable); the rest of its sections are
    missing, so each is judged fail (affinity) or error, never pass."""
    calls: list[str] = []

    def collect_host(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        calls.append(target.name)
        topo = topo_of[target.name]
        if topo is None:
            return HostCollection(target.name, {}, False, "ssh: connect to host 127.0.0.1 port 1: refused")
        sections = {collect.TOPO: Section(0, topo.read_text())}
        return HostCollection(target.name, sections, True, priority=priority)

    monkeypatch.setattr(native, "collect_host", collect_host)
    return calls


def test_validate_fail_is_1_and_html_has_the_collected_topology(
    inventory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_collector(monkeypatch, {"gpu01": ALL_SYS_TOPO, "gpu02": None})
    page = tmp_path / "gate.html"
    junit = tmp_path / "gate.xml"
    code, out, _ = run(
        capsys, "validate", "-i", str(inventory), "--html", str(page), "--junit-xml", str(junit)
    )
    assert code == 1
    assert out.splitlines()[0] == "FAIL  gpu01" and out.splitlines()[-1].startswith("FAIL: 2 host(s)")
    html = page.read_text()
    affinity = html[html.index("<h2>GPU-NIC affinity</h2>") :]
    gpu01 = affinity[affinity.index("<h3>gpu01 ") :]
    assert 'class="affinity"' in gpu01 and SOLID[validate.Status.FAIL] in gpu01
    assert "<h3>gpu02 " not in affinity and "no topology record kept for gpu02" in affinity
    root = ET.parse(junit).getroot()
    assert root.get("errors") != "0" and root.get("failures") != "0"
    assert root.find("testsuite").get("timestamp") != "1970-01-01T00:00:00"


def test_validate_unreachable_only_is_3_and_json_lines_stay_per_host(
    inventory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_collector(monkeypatch, {"gpu01": None, "gpu02": None})
    code, out, _ = run(capsys, "validate", "-i", str(inventory), "--json")
    assert code == 3
    assert [(r["host"], r["verdict"]) for r in map(json.loads, out.splitlines())] == [
        ("gpu01", "error"),
        ("gpu02", "error"),
    ]


def test_validate_pass_is_0(
    inventory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def all_pass(_reader, hosts, *args, **kwargs):  # type: ignore[no-untyped-def]
        return [validate.HostResult(h.name, (passed("host.pfc", "mlx5_0", "3", "3"),)) for h in hosts]

    monkeypatch.setattr(validate, "read_hosts", all_pass)
    assert run(capsys, "validate", "-i", str(inventory))[0] == 0


def test_validate_bad_report_path_is_2_before_any_host_is_contacted(
    inventory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = fake_collector(monkeypatch, {"gpu01": None, "gpu02": None})
    code, _, err = run(capsys, "validate", "-i", str(inventory), "--junit-xml", str(tmp_path))
    assert code == 2 and calls == []
    assert "--junit-xml" in err and "is a directory" in err


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_validate_draws_progress_on_a_terminal_stderr_only(
    inventory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_collector(monkeypatch, {"gpu01": ALL_SYS_TOPO, "gpu02": None})
    terminal = FakeTty()
    monkeypatch.setattr("sys.stderr", terminal)
    code = main(["validate", "-i", str(inventory), "--json"])
    out = capsys.readouterr().out
    assert code == 1 and all(json.loads(line)["host"] for line in out.splitlines())
    drawn = terminal.getvalue()
    assert "2/2 hosts  1 fail  1 error" in drawn and drawn.endswith("\r\x1b[K")
