"""Every real switch output in tests/data/real/ (cited in its INDEX.tsv) read by the gate's own parser
for that command, to its truth file; and the lab's mock, asked the same command, answers with the
same structure (JSON: the same keys and value types where both have them; text: the same header).

A command without a public real output has an INDEX row with file `-`: its mock answer is unverified
(docs/switches/ says so), and this test checks that every probe command is listed one way or the other.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from fabcheck.collect.probes import Probe
from fabcheck.collect.switch_probes import PROBES
from fabcheck.errors import ParseError
from fabcheck_lab.mockswitch.nvue import NvueDevice
from tests.invariant.harness import converged, session_of

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
ROWS = list(csv.DictReader((REAL / "INDEX.tsv").open(), delimiter="\t"))
PROBE_COMMANDS = {(platform, probe.command) for platform, probes in PROBES.items() for probe in probes}
CAPTURES = [row for row in ROWS if row["file"] != "-" and (row["platform"], row["command"]) in PROBE_COMMANDS]
# Real table layouts of a command the gate no longer reads (NVUE's roce status: its sub-nodes are
# documented under the RoCE preset only): the mock's table must still have the same rows and sections,
# and every field a parser reads from it (none now) must be a row of the real table.
PARSED_FIELDS: dict[str, tuple[str, ...]] = {"nv show interface swp16 qos roce status": ()}
# A port probe's command names `{port}`: the mock is asked it for its first managed port.
MOCK_PORT = {"nvue": "swp1", "sonic": "Ethernet0", "eos": "Ethernet1"}
# SONiC views whose columns, or whose existence, follow the release (fabcheck_lab.mockswitch.sonic_wire):
# the mock is asked at the sample's own branch ("master": the newest layout).
# NVUE's PHY view, renamed `link phy health` in CL 5.15, likewise (its mock fixes the release when made,
# so a mock of the sample's release is made; the wire views do not depend on the pushed config).
RELEASE_LAYOUTS = {
    ("sonic", "show interfaces counters fec-stats"),
    ("sonic", "show interfaces flap"),
    ("nvue", "nv show interface {port} link phy health"),
}
LAYOUTS = [row for row in ROWS if row["file"] != "-" and row["command"] in PARSED_FIELDS]


def probe_for(platform: str, command: str) -> Probe:
    return next(probe for probe in PROBES[platform] if probe.command == command)


def as_truth(placed: list[Any]) -> list[Any]:
    return [[port, type(record).__name__, dataclasses.asdict(record)] for port, record in placed]


def test_every_probe_command_has_a_real_output_or_is_listed_unverified() -> None:
    listed = {(row["platform"], row["command"]) for row in ROWS}
    missing = [
        (platform, probe.command)
        for platform, probes in PROBES.items()
        for probe in probes
        if (platform, probe.command) not in listed
    ]
    assert missing == []


@pytest.mark.parametrize("row", CAPTURES, ids=lambda row: row["file"])
def test_the_parser_reads_the_real_output_to_its_truth(row: dict[str, str]) -> None:
    probe = probe_for(row["platform"], row["command"])
    text = (REAL / row["file"]).read_text()
    truth = json.loads((REAL / "truth" / (Path(row["file"]).name + ".json")).read_text())
    if "error" in truth:
        with pytest.raises(ParseError, match=truth["error"]):
            probe.parse(text, None, row["file"])
        return
    assert json.loads(json.dumps(as_truth(probe.parse(text, None, row["file"])))) == truth["records"]


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    return type(value).__name__


def _same_structure(real: Any, mock: Any, where: str) -> list[str]:
    """Where the mock's JSON differs from the real one in keys or value types (for entries keyed by
    names, like ports or queues, one real entry is compared with one mock entry; the object's other
    keys, such as queuestat's per-port "time" beside its queues, one by one)."""
    if isinstance(real, dict) and isinstance(mock, dict):
        real_named = [value for key, value in real.items() if key[:1].isupper()]
        mock_named = [value for key, value in mock.items() if key[:1].isupper()]
        gaps = []
        if real_named and mock_named:
            gaps += _same_structure(real_named[0], mock_named[0], f"{where}.*")
        elif real_named:
            gaps.append(f"{where}: the mock lacks the named entries")
        fields = [key for key in real if not key[:1].isupper()]
        gaps += [f"{where}.{key}: the mock lacks it" for key in fields if key not in mock]
        for key in [key for key in fields if key in mock]:
            gaps += _same_structure(real[key], mock[key], f"{where}.{key}")
        return gaps
    if type(real) is not type(mock):
        return [f"{where}: real {type(real).__name__}, mock {type(mock).__name__}"]
    return []


@pytest.mark.parametrize("row", CAPTURES, ids=lambda row: row["file"])
def test_the_mock_answers_the_same_command_with_the_same_structure(row: dict[str, str]) -> None:
    platform = row["platform"]
    device = converged(platform)
    if (platform, row["command"]) in RELEASE_LAYOUTS:
        device.spec = dataclasses.replace(device.spec, release=row["release"].split()[0] + ".0-mock")
        if platform == "nvue":
            device = NvueDevice(device.spec)
    session = session_of(device, platform)
    mock = session.handle(row["command"].replace("{port}", MOCK_PORT[platform]))
    real = (REAL / row["file"]).read_text()
    if row["file"].endswith(".json") or row["command"].endswith("--json"):
        assert _same_structure(json.loads(real), json.loads(mock), row["command"]) == []
    else:
        header = next(line for line in real.splitlines() if line.strip())
        assert header.split() == next(line for line in mock.splitlines() if line.strip()).split()


def _row_names(text: str) -> list[str]:
    """First-column names of an NVUE attribute table, section titles and sub-table headers."""
    names = []
    for line in text.splitlines():
        if not line.strip() or set(line.strip()) <= {"-", " ", "="}:
            continue
        if line.startswith("    "):  # a sub-table row or header: its header words only
            if (
                "----" not in line
                and not line.strip()[0].isdigit()
                and line.split()[0] not in ("cnp", "roce")
            ):
                names.append(" ".join(line.split()))
            continue
        names.append(line[:20].strip() if not line[0].isupper() else line.strip())
    return names


@pytest.mark.parametrize("row", LAYOUTS, ids=lambda row: row["file"])
def test_the_mock_table_has_the_real_rows_and_the_parsed_fields_are_real(row: dict[str, str]) -> None:
    platform = row["platform"]
    real = (REAL / row["file"]).read_text()
    mock = session_of(converged(platform), platform).handle(row["command"].replace("swp16", "swp2"))
    assert _row_names(mock) == _row_names(real)
    words = set(" ".join(_row_names(real)).split())
    assert [name for name in PARSED_FIELDS[row["command"]] if name not in words] == []
