"""A stand-in for Slurm's scontrol on PATH, for the node-check --slurm tests: it records every argv
and keeps one node's state in a JSON file, answering as the real client does.

Shapes (SchedMD/slurm@284c3b95f08a2dc2478499837b03355e1b9c5c75, not a captured output):
- `scontrol show node NAME`: src/api/node_info.c slurm_sprint_node_table: `NodeName=... Arch=...
  CoresPerSocket=...` then lines indented by three spaces, `State=<BASE>[+FLAG...] ThreadsPerCore=...`,
  and, with a reason, `Reason=<text> [<user>@<time>]`; a reason's further lines indented by 10.
- An unknown node: src/scontrol/info_node.c prints `Node NAME not found` (exit 1).
- `scontrol update NodeName=N State=DRAIN Reason=...` needs a reason (src/scontrol/update_node.c:
  "You must specify a reason when DOWNING or DRAINING a node"); State=RESUME clears the drain and
  its reason.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCRIPT = r"""#!{python}
import json, sys
from pathlib import Path
state_file = Path({state!r})
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
node = json.loads(state_file.read_text())
args = sys.argv[1:]
if args[:2] == ["show", "node"] and len(args) == 3:
    if args[2] != node["name"]:
        print("Node %s not found" % args[2])
        sys.exit(1)
    lines = [
        "NodeName=%s Arch=x86_64 CoresPerSocket=1 " % node["name"],
        "CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.02",
        "AvailableFeatures=(null)",
        "ActiveFeatures=(null)",
        "Gres=(null)",
        "NodeAddr=%s NodeHostName=%s Version=22.05.8" % (node["name"], node["name"]),
        "OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) ",
        "RealMemory=1 AllocMem=0 FreeMem=1000 Sockets=4 Boards=1",
        "State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A" % node["state"],
        "Partitions=gpu ",
        "BootTime=2026-12-07T05:00:00 SlurmdStartTime=2026-12-07T05:00:02",
    ]
    if node.get("reason"):
        first, *rest = node["reason"].split("\n")
        lines.append("Reason=%s [%s@2026-12-07T06:00:00]" % (first, node.get("by", "root")))
        lines += ["       " + more for more in rest]
    print("\n   ".join(lines))
    print()
    sys.exit(0)
if args[:1] == ["update"]:
    fields = dict(word.split("=", 1) for word in args[1:])
    if fields.get("NodeName") != node["name"]:
        print("scontrol: error: Invalid node name specified", file=sys.stderr)
        sys.exit(1)
    base = node["state"].split("+")[0]
    flags = [f for f in node["state"].split("+")[1:] if f != "DRAIN"]
    if fields.get("State") == "DRAIN":
        if not fields.get("Reason"):
            print("You must specify a reason when DOWNING or DRAINING a node.", file=sys.stderr)
            sys.exit(1)
        node.update(state="+".join([base, "DRAIN", *flags]), reason=fields["Reason"], by="root")
    elif fields.get("State") == "RESUME":
        node.update(state="+".join([base, *flags]), reason="")
    else:
        print("scontrol: unexpected update %r" % args, file=sys.stderr)
        sys.exit(1)
    state_file.write_text(json.dumps(node))
    sys.exit(0)
print("scontrol: unexpected %r" % args, file=sys.stderr)
sys.exit(1)
"""


class FakeScontrol:
    def __init__(
        self, folder: Path, name: str, state: str = "IDLE", reason: str = "", by: str = "root"
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "scontrol"
        self.state_file = folder / "node.json"
        self.log = folder / "argv.log"
        self.state_file.write_text(json.dumps({"name": name, "state": state, "reason": reason, "by": by}))
        self.log.write_text("")
        self.path.write_text(
            SCRIPT.format(python=sys.executable, state=str(self.state_file), log=str(self.log))
        )
        self.path.chmod(0o755)

    @property
    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    @property
    def node(self) -> dict[str, str]:
        loaded: dict[str, str] = json.loads(self.state_file.read_text())
        return loaded

    def updates(self) -> list[list[str]]:
        return [call for call in self.calls if call[:1] == ["update"]]
