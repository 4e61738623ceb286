"""What a switch platform consists of, and that each part is wired to its record.

A platform is: its `Platform` record (fabcheck/intent/platforms.py), its templates
(templates/<folder>/, entry switch.j2), its driver module (fabcheck/switch/platforms/), its parser
module(s) (fabcheck/parsers/, found through its probe table in fabcheck/collect/switch_probes.py) and
its mock (lab/src/fabcheck_lab/mockswitch/). These tests list those files for every record, check that they
exist, and that the record's names resolve to working parts: the driver it names is the one pushes
use, its probes parse what its mock answers, its templates render a desired switch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fabcheck.collect.switch_probes import PROBES, RELEASE_READS
from fabcheck.desired.switch import desired_switch
from fabcheck.errors import ParseError
from fabcheck.incast.capture import INCAST_PROBES
from fabcheck.intent.fabric import InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent
from fabcheck.intent.platforms import (
    PLATFORM_GROUP_PREFIX,
    PLATFORMS,
    Platform,
    UnknownPlatform,
    platform_named,
    resolve,
)
from fabcheck.switch.driver import PushError, SwitchDriver, driver_for
from fabcheck.switch.render import ENTRY_TEMPLATE, TEMPLATES, render_switch
from fabcheck_lab.mockswitch.device import SwitchDevice
from fabcheck_lab.mockswitch.server import device_class
from fabcheck_lab.mockswitch.spec import SwitchSpec

REPO = Path(__file__).resolve().parents[2]
RECORDS = sorted(PLATFORMS.values(), key=lambda record: record.name)


def module_file(dotted: str) -> Path:
    """The source file of the module a record's `module:attribute` name points into."""
    module = importlib.import_module(dotted.partition(":")[0])
    assert module.__file__ is not None
    return Path(module.__file__).resolve()


def platform_files(record: Platform) -> dict[str, list[Path]]:
    """Every file the platform provides, by part."""
    parser_modules = sorted({probe.parse.__module__ for probe in PROBES[record.name]})
    return {
        "record": [REPO / "fabcheck" / "intent" / "platforms.py"],
        "templates": sorted((TEMPLATES / record.template_folder).glob("*.j2")),
        "driver": [module_file(record.driver)],
        "parsers": [REPO / (name.replace(".", "/") + ".py") for name in parser_modules],
        "probes": [module_file(record.probes)],
        "mock": [module_file(record.mock)],
    }


def first_port(record: Platform) -> str:
    return record.port_example.split(",")[0].strip()


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.name)
def test_every_file_of_the_platform_exists_where_the_readme_says(record: Platform) -> None:
    files = platform_files(record)
    assert TEMPLATES / record.template_folder / ENTRY_TEMPLATE in files["templates"]
    assert all(path.is_file() for paths in files.values() for path in paths), files
    expected_homes = {
        "driver": REPO / "fabcheck" / "switch" / "platforms",
        "parsers": REPO / "fabcheck" / "parsers",
        "probes": REPO / "fabcheck" / "collect",
        "mock": REPO / "lab" / "src" / "fabcheck_lab" / "mockswitch",
    }
    for part, home in expected_homes.items():
        assert all(path.parent == home for path in files[part]), (part, files[part])


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.name)
def test_the_record_names_the_driver_pushes_use(record: Platform) -> None:
    driver = resolve(record.driver)
    assert isinstance(driver, type) and issubclass(driver, SwitchDriver)
    assert driver.platform == record.name
    assert driver_for(record.name) is driver


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.name)
def test_the_record_names_its_probes_and_the_incast_reads_some_of_them(record: Platform) -> None:
    probes = PROBES[record.name]
    assert probes is resolve(record.probes)
    # A show, NVUE's `nv config show`, or SONiC's `cat` of the saved CONFIG_DB file: nothing that writes.
    assert all(
        "show" in probe.command.split()[:3] or probe.command.split()[0] == "cat" for probe in probes
    ), "gate probes only read"
    incast = INCAST_PROBES[record.name]
    assert [probe.name for probe in incast] == list(record.incast_probes)
    assert not any(probe.counter for probe in incast), "the incast's two captures make the difference"


def _bind_nvue_port_scheduler(running: dict[str, Any], port: str) -> None:
    running.setdefault("qos", {}).setdefault("egress-scheduler", {})["own"] = {
        "traffic-class": {"3": {"mode": "dwrr", "bw-percent": 50}}
    }
    interface = running.setdefault("interface", {}).setdefault(port, {})
    interface.setdefault("qos", {})["egress-scheduler"] = {"profile": "own"}


# A probe of a per-port override answers with nothing of the port's own where none is bound (the port
# runs the switch-wide setting): bind one, so every probe's answer is read as a record.
PORT_OVERRIDES: dict[str, Callable[[dict[str, Any], str], None]] = {"nvue": _bind_nvue_port_scheduler}


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.name)
def test_the_records_mock_answers_every_probe_in_a_form_its_parser_reads(record: Platform) -> None:
    device = device_class(record.name)
    assert issubclass(device, SwitchDevice) and device is resolve(record.mock)
    port = first_port(record)
    heard = ((port, "gpu01", "eth0"),)  # LLDP yields a record only where a neighbour is heard
    spec = SwitchSpec("leaf01", record.name, "127.0.3.1", 2201, "admin", "pw", (port,), heard)
    mock = device(spec)
    PORT_OVERRIDES.get(record.name, lambda running, port: None)(mock.running, port)
    session = mock.new_session("admin")
    if record.needs_enable:
        session.handle("enable")
    unreadable = []
    # probes bound to releases: those of the release the mock names to the gate's own release read
    read = RELEASE_READS.get(record.name)
    release = None if read is None else read.parse(session.handle(read.command), f"mock {record.name}")
    for probe in PROBES[record.name]:
        if not probe.sent_to(release):
            continue
        at = port if probe.scope == "switch-port" else None
        command = probe.command_for(at)
        try:
            placed = probe.parse(session.handle(command), at, f"mock {record.name}: {command}")
        except ParseError as err:
            unreadable.append(f"{command}: {err}")
            continue
        assert placed, f"{command}: the mock's answer yields no record"
    assert not unreadable


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.name)
def test_the_records_templates_render_a_desired_switch(record: Platform) -> None:
    port = first_port(record)
    assert record.port_name.fullmatch(port), "the record's example is one of its own port names"
    switch = InventoryNode(
        "leaf01",
        (PLATFORM_GROUP_PREFIX + record.name,),
        {"switch_address": "192.0.2.1", "switch_username": "admin", "switch_ports": [port]},
        {},
    )
    gpu = InventoryNode(
        "gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": f"leaf01:{port}"}}, {0: "mlx5_0"}
    )
    fabric = read_fabric([switch, gpu], lambda _value: "")
    assert fabric.switch("leaf01").device_type == record.device_type
    desired = desired_switch(FabricIntent.model_validate({}), fabric, "leaf01")
    assert desired.mtu <= record.max_mtu
    rendered = render_switch(desired)
    assert port in rendered.text and rendered.lines


def test_every_template_folder_and_driver_module_belongs_to_a_record() -> None:
    folders = {path.parent.name for path in TEMPLATES.glob(f"*/{ENTRY_TEMPLATE}")}
    assert folders == {record.template_folder for record in RECORDS}
    drivers = {
        path.stem
        for path in (REPO / "fabcheck" / "switch" / "platforms").glob("*.py")
        if path.stem != "__init__"
    }
    assert drivers == {module_file(record.driver).stem for record in RECORDS}


def test_a_platform_without_a_record_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(UnknownPlatform, match="unknown switch platform 'junos'; known: nvue, sonic, eos"):
        platform_named("junos")
    with pytest.raises(PushError, match="no driver for platform 'junos'") as err:
        driver_for("junos")
    assert err.value.rolled_back
    with pytest.raises(UnknownPlatform, match="has no NoSuchDriver"):
        resolve("fabcheck.switch.platforms.eos:NoSuchDriver")
