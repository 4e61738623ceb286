"""playbooks/node_check.yml on the controller itself (connection local, no lab): every selected GPU host
gets the record `fabcheck desired-record --all` plans, byte for byte, at the destination; a second run
changes nothing; the controller's folder of records is gone afterwards."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from fabcheck.desired.record import read_record, record_json
from fabcheck.gate.node_check import host_records
from fabcheck.intent.loader import load_inventory

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "playbooks" / "node_check.yml"
INVENTORY = REPO / "inventory" / "example"


def playbook_binary() -> str:
    """The ansible-playbook of this Python's environment (it runs fabcheck on the controller)."""
    return str(Path(sys.executable).parent / "ansible-playbook")


def run_play(dest: Path) -> subprocess.CompletedProcess[str]:
    argv = [
        playbook_binary(),
        str(PLAYBOOK),
        "-i",
        str(INVENTORY),
        "--limit",
        "gpu01,gpu03",
        "-e",
        "ansible_connection=local",
        "-e",
        "ansible_python_interpreter={{ ansible_playbook_python }}",
        "-e",
        f"fabcheck_record_dest={dest}/{{{{ inventory_hostname }}}}/desired.json",
    ]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def test_the_play_installs_each_hosts_planned_record_and_is_idempotent(tmp_path: Path) -> None:
    before = {p.name for p in Path(tempfile.gettempdir()).glob("*.fabcheck-records")}
    first = run_play(tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    planned = host_records(load_inventory(INVENTORY), 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu01", "gpu03"]
    for host in ("gpu01", "gpu03"):
        text = (tmp_path / host / "desired.json").read_text()
        assert text == record_json(planned[host])
        assert read_record(text, host) == planned[host]
    again = run_play(tmp_path)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]
    after = {p.name for p in Path(tempfile.gettempdir()).glob("*.fabcheck-records")}
    assert after <= before  # the controller's folder of records was removed
