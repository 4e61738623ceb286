"""Re-capture tests/data/switch/ from the lab's mock switches (run by hand after a mock change):

    .venv/bin/python tests/checks/capture_switch_data.py

For each state (factory, converged by the platform drivers, then each switch fault on the converged
switch) it runs the gate's probes over real netmiko sessions and writes every raw output as
tests/data/switch/<state>/<switch>/<probe>[@<port>].txt; a counter probe's first reading is
<probe>[@<port>].before.txt.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "switch")]

from mockswitches import mock_switches  # noqa: E402
from switchfabric import PORTS, SWITCHES, desired, snapshot_stem  # noqa: E402

from fabcheck.collect.switch_probes import PROBES  # noqa: E402
from fabcheck.gate.switch_stage import read_switch  # noqa: E402
from fabcheck.switch.connect import connect  # noqa: E402
from fabcheck.switch.driver import driver_for, push  # noqa: E402
from fabcheck.switch.render import render_switch  # noqa: E402
from fabcheck_lab.mockswitch import heal_switch_fault, inject_switch_fault  # noqa: E402

DATA = HERE.parent / "data" / "switch"
FAULTS = ("switch-pfc-prio", "switch-ecn-off")
COUNTERS = {probe.name: probe.counter for probes in PROBES.values() for probe in probes}


def capture(lab, state: str) -> None:
    for name, platform in SWITCHES.items():
        ports = [port.port for port in desired(name).ports]
        evidence, outputs = read_switch(lab.login(name), platform, ports)
        if evidence.unreachable or evidence.missing:
            raise SystemExit(f"{state} {name}: {evidence.unreachable or evidence.missing}")
        folder = DATA / state / name
        folder.mkdir(parents=True, exist_ok=True)
        seen: set[str] = set()
        for output in outputs:  # a counter probe's first reading is <stem>.before.txt
            stem = snapshot_stem(output.probe, output.port)
            name_ = f"{stem}.txt" if stem in seen or not COUNTERS.get(output.probe) else f"{stem}.before.txt"
            seen.add(stem)
            (folder / name_).write_text(output.text)


def converge(lab) -> None:
    for name, platform in SWITCHES.items():
        driver = driver_for(platform)(connect(lab.login(name)))
        push(driver, render_switch(desired(name)), check=False)
        driver.connection.disconnect()


def main() -> None:
    # gpu01's NIC i is cabled to the first port of switch i and sends its interface name over LLDP.
    heard = {
        name: ((PORTS[platform][0], "gpu01", f"ens{i + 1}np0"),)
        for i, (name, platform) in enumerate(SWITCHES.items())
    }
    with (
        tempfile.TemporaryDirectory() as run_dir,
        mock_switches(Path(run_dir), SWITCHES, 40, neighbors=heard) as lab,
    ):
        capture(lab, "factory")
        converge(lab)
        capture(lab, "converged")
        for fault in FAULTS:
            for name in SWITCHES:
                inject_switch_fault(lab.run_dir, name, fault)
            capture(lab, fault)
            for name in SWITCHES:
                heal_switch_fault(lab.run_dir, name, fault)


if __name__ == "__main__":
    main()
