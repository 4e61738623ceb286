"""The NVLink domain of each GPU host (docs/checks/nvlink.md): host.nvlink, host.nvlink_fabric, host.imex
and host.fabric_manager.

What each host must show is its DesiredNvlinkHost (fabcheck.desired.nvlink, derived once by the gate
plan and carried on DesiredHost.nvlink). The facts the rules rest on:

- `nvidia-smi nvlink -s` prints `Link n: <GB/s>` or `Link n: <inactive>` per link; H100 and GB200 SXM
  GPUs have 18 links (26.562 and 53.125 GB/s per link: bottlerocket-os/bottlerocket PR 4418,
  NVIDIA/k8s-test-infra issue 371). A link at another rate or inactive is a degraded GPU.
- The `nvidia-smi -q` "Fabric" section (NVML nvmlGpuFabricInfo_t: https://docs.nvidia.com/deploy/nvml-api/
  structnvmlGpuFabricInfo__t.html): State Completed with Status Success once the GPU registered in
  its NVLink fabric (Status is valid only when State is Completed); ClusterUUID all zero means no
  multi-node NVLink information (NVIDIA/nccl src/mnnvl.cc), so the UUID rule applies to multi-node
  domains only (a lone HGX server shows zero); CliqueId is unique only together with the UUID
  (https://github.com/NVIDIA/nccl/issues/1301) and Azure fails CliqueId 0 on GB200
  (https://github.com/Azure/azhpc-images/pull/506); a real GB200 node shows Health Summary Unhealthy
  with State Completed (https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/626), so the
  health lines are judged on their own.
- IMEX: the daemon reads /etc/nvidia-imex/nodes_config.cfg only at start-up
  (https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/1418); `nvidia-imex-ctl -N` shows
  every node's state, the connection matrix (C connected) and `Domain State: UP`
  (https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/cmdservice.html).
- nvidia-fabricmanager must run on NVSwitch HGX/DGX baseboards
  (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/).

When the intent does not ask (nvlink.gpus null, imex or fabric_manager false) a check is a named skip;
a record that could not be read is an ERROR naming its command.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.host.evidence import HostEvidence, unreadable_error
from fabcheck.checks.host.fleet import FleetCheck
from fabcheck.checks.host.judges import HostCheck
from fabcheck.checks.model import Finding, Measure, errored, failed, passed, skipped
from fabcheck.collect import host as probes
from fabcheck.collect.host import FABRIC_MANAGER_UNIT, IMEX_NODES_CONFIG, IMEX_UNIT, Unreadable
from fabcheck.desired.nic import DesiredHost
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nvidia_smi_q import GpuQuery, SmiQuery
from fabcheck.parsers.nvlink_records import ZERO_UUID, GpuFabric, ImexStatus, NvlinkGpu, NvlinkStatus

NVLINK = "host.nvlink"
NVLINK_FABRIC = "host.nvlink_fabric"
IMEX = "host.imex"
FABRIC_MANAGER = "host.fabric_manager"

ROLE = "nvlink"  # the role that writes nodes_config.cfg and starts nvidia-imex / nvidia-fabricmanager
RATE_TOLERANCE = 0.005  # a link within 0.5 % of nvlink.link_gbytes is at it (nvidia-smi prints 3 decimals)
CONNECTED = "C"
IMEX_LEGEND = {
    "C": "connected",
    "N": "never connected",
    "D": "disconnected",
    "R": "recovering",
    "A": "authenticating",
    "I": "invalid",
    "!V!": "version mismatch",
    "!M!": "node map mismatch",
}
FM_GUIDE = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/"


def gpu(index: int) -> str:
    return f"GPU{index}"


# ---- when each check applies ------------------------------------------------------------------------


def _nvlink_of(desired: DesiredHost) -> DesiredNvlinkHost | None:
    return desired.nvlink


def nvlink_applies(desired: DesiredHost) -> str | None:
    wanted = _nvlink_of(desired)
    if wanted is None:
        return "no NVLink plan for this host (fabric_intent.nvlink)"
    return "fabric_intent.nvlink.gpus is null: NVLink not judged" if wanted.gpus is None else None


def fabric_judged(desired: DesiredHost) -> str | None:
    """Why host.nvlink_fabric does not judge this host (None: it does): where the Fabric registration
    exists (fabric_applies) and the host has an NVLink plan. A node of `--via slurm` sends its
    `nvidia-smi -q` for this check only where it applies (fabcheck.gate.step_judge)."""
    return fabric_applies(desired) or (None if desired.nvlink is not None else "no NVLink plan")


def fabric_applies(desired: DesiredHost) -> str | None:
    """The Fabric registration exists where the GPUs sit on NVSwitches: a multi-node domain (IMEX,
    MNNVL trays) or an HGX/DGX baseboard (fabric manager). NVLink bridges alone register in none."""
    reason = nvlink_applies(desired)
    wanted = _nvlink_of(desired)
    if reason or wanted is None:
        return reason
    if not (wanted.multi_node or wanted.imex or wanted.fabric_manager):
        return (
            f"{wanted.host} is an NVLink domain of its own without nvlink.fabric_manager or nvlink.imex: "
            "no NVLink fabric to register in"
        )
    return None


def imex_applies(desired: DesiredHost) -> str | None:
    wanted = _nvlink_of(desired)
    if wanted is None:
        return "no NVLink plan for this host (fabric_intent.nvlink)"
    return None if wanted.imex else "fabric_intent.nvlink.imex is false: IMEX not judged"


def fabric_manager_applies(desired: DesiredHost) -> str | None:
    wanted = _nvlink_of(desired)
    if wanted is None:
        return "no NVLink plan for this host (fabric_intent.nvlink)"
    if not wanted.fabric_manager:
        return "fabric_intent.nvlink.fabric_manager is false: nvidia-fabricmanager not judged"
    return None


# ---- host.nvlink ------------------------------------------------------------------------------------


def _rate(gbytes: float) -> str:
    return f"{gbytes:g} GB/s"


def check_nvlink(status: NvlinkStatus | Unreadable, wanted: DesiredNvlinkHost) -> list[Finding]:
    """Each GPU's NVLinks (`nvidia-smi nvlink -s`): links_per_gpu active, each at link_gbytes (within
    RATE_TOLERANCE), or, with link_gbytes null, every active link of the host at one rate; and the
    intent's number of GPUs."""
    assert wanted.gpus is not None  # nvlink_applies
    rate = "each at " + _rate(wanted.link_gbytes) if wanted.link_gbytes else "every link at one rate"
    expected = f"{wanted.links_per_gpu} active NVLinks, {rate}"
    if isinstance(status, Unreadable):
        return [unreadable_error(NVLINK, "GPUs", f"{wanted.gpus} GPUs: {expected}", status)]
    findings: list[Finding] = []
    if len(status.gpus) != wanted.gpus:
        shown = ", ".join(gpu(g.index) for g in status.gpus) or "none"
        actual = f"{len(status.gpus)} GPU(s) in `nvidia-smi nvlink -s`: {shown}"
        hint = (
            "a GPU missing from nvidia-smi fell off the bus or lost its driver: check `nvidia-smi -L` and "
            "`dmesg` (Xid 79), reseat or RMA it; else fix fabric_intent.nvlink.gpus"
        )
        findings.append(failed(NVLINK, "GPUs", f"{wanted.gpus} NVLink GPUs (nvlink.gpus)", actual, hint))
    host_rate = wanted.link_gbytes or _common_rate(status.gpus)
    for shown_gpu in status.gpus:
        findings.append(_judge_links(shown_gpu, wanted, host_rate, expected))
    return findings


def _common_rate(gpus: Sequence[NvlinkGpu]) -> float | None:
    """The rate most active links of the host show (None: none active, or a tie)."""
    counts = Counter(link.gbytes for g in gpus for link in g.links if link.gbytes is not None)
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _judge_links(shown: NvlinkGpu, wanted: DesiredNvlinkHost, rate: float | None, expected: str) -> Finding:
    subject = gpu(shown.index)
    active = {link.link: link.gbytes for link in shown.links if link.gbytes is not None}
    inactive = [link.link for link in shown.links if link.gbytes is None]
    problems: list[str] = []
    if not shown.links and shown.note:
        problems.append(f"no link listed: {shown.note!r}")
    elif len(active) != wanted.links_per_gpu:
        down = f" (inactive: {', '.join(f'Link {n}' for n in inactive)})" if inactive else ""
        problems.append(f"{len(active)} of {wanted.links_per_gpu} NVLinks active{down}")
    if rate is None and active:
        problems.append("the host's links show no one rate: " + _rates(active.values()))
    elif rate is not None:
        off = {n: g for n, g in active.items() if abs(g - rate) > RATE_TOLERANCE * rate}
        if off:
            slow = ", ".join(f"Link {n} at {_rate(g)}" for n, g in off.items())
            problems.append(f"{slow} (not {_rate(rate)})")
    measure = Measure(round(sum(active.values()), 3), "GB/s", wanted.gpu_gbytes)
    if problems:
        hint = (
            f"drain the node; `nvidia-smi nvlink -s -i {shown.index}` and `nvidia-smi nvlink -e -i "
            f"{shown.index}` (error counters), `dmesg` for Xid 74 (NVLink error); reset the GPU "
            f"(`nvidia-smi -r -i {shown.index}`) or reboot; a link that stays down: reseat the tray or RMA"
        )
        finding = failed(NVLINK, subject, expected, "; ".join(problems), hint)
    else:
        at = _rate(rate) if rate is not None else "no rate"
        finding = passed(NVLINK, subject, expected, f"{len(active)} NVLinks active at {at}")
    return dataclasses.replace(finding, measure=measure)


def _rates(rates: Iterable[float]) -> str:
    counts = Counter(rates)
    return ", ".join(f"{count} at {_rate(g)}" for g, count in sorted(counts.items()))


def _judge_nvlink(
    evidence: HostEvidence, desired: DesiredHost, _intent: FabricIntent, _inputs: Inputs
) -> list[Finding]:
    assert desired.nvlink is not None  # nvlink_applies
    return check_nvlink(evidence.nvlink_status, desired.nvlink)


# ---- host.nvlink_fabric -----------------------------------------------------------------------------


def _fabric_expected(wanted: DesiredNvlinkHost) -> str:
    text = "fabric State Completed, Status Success, Health Summary not Unhealthy, Bandwidth Full"
    if wanted.multi_node:
        text += (
            f"; ClusterUUID and CliqueId non-zero, one ClusterUUID.CliqueId on every GPU of NVLink domain "
            f"{wanted.domain} ({', '.join(wanted.members)})"
        )
    return text


def _gpu_problems(shown: GpuFabric, wanted: DesiredNvlinkHost) -> list[str]:
    """What one GPU's Fabric section shows wrong on its own (the domain's agreement is judged after)."""
    problems: list[str] = []
    if shown.state != "Completed":
        problems.append(f"State {shown.state or 'N/A'}")
    elif shown.status != "Success":
        problems.append(f"Status {shown.status or 'N/A'}")
    if shown.health_summary == "Unhealthy":
        problems.append("Health Summary Unhealthy")
    if shown.bandwidth is not None and shown.bandwidth != "Full":
        problems.append(f"Health Bandwidth {shown.bandwidth}")
    if wanted.multi_node:
        if shown.cluster_uuid in (None, ZERO_UUID):
            problems.append(f"ClusterUUID {shown.cluster_uuid or 'N/A'}")
        if not shown.clique_id:
            problems.append(f"CliqueId {'N/A' if shown.clique_id is None else shown.clique_id}")
    return problems


def _host_key(query: SmiQuery) -> str | None:
    """The one domain key every GPU of the host shows (None: some show none, or they differ)."""
    keys = {g.fabric.domain_key if g.fabric else None for g in query.gpus}
    return next(iter(keys)) if len(keys) == 1 else None


def _fabric_hint(wanted: DesiredNvlinkHost, index: int) -> str:
    services = []
    if wanted.fabric_manager:
        services.append(f"{FABRIC_MANAGER_UNIT} (its version must equal the driver's)")
    if wanted.imex:
        services.append(f"{IMEX_UNIT} with the domain's node list")
    running = f"role {ROLE} starts {' and '.join(services)}; " if services else ""
    return (
        f"{running}on this host: `nvidia-smi -q -i {index} | grep -A 10 Fabric`; State In Progress: the "
        f"fabric manager (and NVLSM on NVLink 5 trays) is not running or failing ({FM_GUIDE}); a tray in "
        "another clique is cabled or partitioned into another NVLink domain: check its NVLink cables and "
        "the NVSwitch trays' partition"
    )


def check_nvlink_fabric(
    queries: Mapping[str, SmiQuery | Unreadable], wanted: Mapping[str, DesiredNvlinkHost]
) -> dict[str, list[Finding]]:
    """Every judged host's GPUs' Fabric sections, then, per multi-node domain, one ClusterUUID.CliqueId
    across the trays read: a tray in the minority is named with the key the rest share; with no key
    ahead (a tie) every tray names the keys of the others."""
    result: dict[str, list[Finding]] = {host: [] for host in queries}
    domains: dict[str, dict[str, str | None]] = {}
    for host, query in queries.items():
        if not isinstance(query, Unreadable) and wanted[host].multi_node:
            domains.setdefault(wanted[host].domain, {})[host] = _host_key(query)
    for host, query in queries.items():
        mine = wanted[host]
        expected = _fabric_expected(mine)
        if isinstance(query, Unreadable):
            result[host].append(unreadable_error(NVLINK_FABRIC, "GPUs", expected, query))
            continue
        against = _domain_verdict(host, domains.get(mine.domain, {}), mine) if mine.multi_node else None
        for shown in query.gpus:
            result[host].append(_judge_gpu_fabric(shown, mine, expected, query, against))
        if mine.multi_node and len(domains.get(mine.domain, {})) < 2:
            reason = (
                f"only {host} of NVLink domain {mine.domain} ({', '.join(mine.members)}) read in this run: "
                "its clique not compared across trays"
            )
            result[host].append(skipped(NVLINK_FABRIC, f"domain {mine.domain}", reason))
    return result


def _domain_verdict(host: str, keys: Mapping[str, str | None], wanted: DesiredNvlinkHost) -> str | None:
    """Why this tray disagrees with the rest of its domain (None: it agrees, or nothing to compare)."""
    known = {h: k for h, k in keys.items() if k is not None}
    if host not in known or len(known) < 2:
        return None
    ranked = Counter(known.values()).most_common()
    common = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
    mine = known[host]
    if mine == common:
        return None
    if common is not None:
        rest = sorted(h for h, k in known.items() if k == common)
        return f"this tray's ClusterUUID.CliqueId {mine}, not {common} of {', '.join(rest)}"
    others = "; ".join(f"{k} on {h}" for h, k in sorted(known.items()) if h != host)
    return f"no key shared by most trays of {wanted.domain}: this tray {mine}, {others}"


def _judge_gpu_fabric(
    shown: GpuQuery, wanted: DesiredNvlinkHost, expected: str, query: SmiQuery, against: str | None
) -> Finding:
    subject = gpu(shown.index)
    if shown.fabric is None:
        actual = "`nvidia-smi -q` shows no Fabric section for this GPU"
        hint = "a driver older than the NVLink fabric report: update the NVIDIA driver (R550 or later)"
        return errored(NVLINK_FABRIC, subject, expected, actual, hint)
    problems = _gpu_problems(shown.fabric, wanted)
    if wanted.multi_node and shown.fabric.domain_key is not None:
        keys = {g.fabric.domain_key for g in query.gpus if g.fabric is not None}
        if len(keys - {None}) > 1 or None in keys:
            problems.append(f"the host's GPUs are in {len(keys)} cliques ({_keys_text(query)})")
    if against:
        problems.append(against)
    if problems:
        return failed(
            NVLINK_FABRIC, subject, expected, "; ".join(problems), _fabric_hint(wanted, shown.index)
        )
    key = shown.fabric.domain_key
    actual = f"State Completed, Status Success, Health {shown.fabric.health_summary or 'N/A'}"
    actual += f", Bandwidth {shown.fabric.bandwidth or 'N/A'}"
    actual += (
        f"; ClusterUUID.CliqueId {key}" if key else f"; ClusterUUID {shown.fabric.cluster_uuid or 'N/A'}"
    )
    return passed(NVLINK_FABRIC, subject, expected, actual)


def _keys_text(query: SmiQuery) -> str:
    counts = Counter((g.fabric.domain_key if g.fabric else None) or "no key" for g in query.gpus)
    return ", ".join(f"{key} on {count} GPU(s)" for key, count in sorted(counts.items()))


def _judge_nvlink_fabric(
    evidence: Mapping[str, HostEvidence],
    desired: Mapping[str, DesiredHost],
    _intents: Mapping[str, FabricIntent],
    _inputs: Inputs,
) -> dict[str, list[Finding]]:
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    judged: dict[str, SmiQuery | Unreadable] = {}
    wanted: dict[str, DesiredNvlinkHost] = {}
    for host, shown in evidence.items():
        reason = fabric_judged(desired[host])
        nvlink = desired[host].nvlink
        if reason or nvlink is None:
            result[host].append(skipped(NVLINK_FABRIC, "host", reason or "no NVLink plan"))
            continue
        judged[host], wanted[host] = shown.gpu_query, nvlink
    for host, findings in check_nvlink_fabric(judged, wanted).items():
        result[host] += findings
    return result


# ---- host.imex --------------------------------------------------------------------------------------


def check_imex(
    active: str | Unreadable,
    nodes: tuple[str, ...] | Unreadable,
    status: ImexStatus | Unreadable | None,
    wanted: DesiredNvlinkHost,
) -> list[Finding]:
    """nvidia-imex active, its node list the domain's addresses, and its view of the domain (`-N`):
    one node per member, each READY and connected, Domain State UP."""
    findings = [_judge_unit(IMEX, IMEX_UNIT, active)]
    findings.append(_judge_node_list(nodes, wanted))
    findings += _judge_domain(status, wanted, active)
    return findings


def _judge_unit(check: str, unit: str, active: str | Unreadable) -> Finding:
    expected = f"{unit} active (systemctl is-active)"
    if isinstance(active, Unreadable):
        return unreadable_error(check, unit, expected, active)
    if active == "active":
        return passed(check, unit, expected, "active")
    hint = (
        f"role {ROLE} enables and starts it fleet-wide; on this host: `systemctl enable --now {unit}`, "
        f"then `journalctl -u {unit}` for why it stopped"
    )
    return failed(check, unit, expected, active, hint)


def _judge_node_list(nodes: tuple[str, ...] | Unreadable, wanted: DesiredNvlinkHost) -> Finding:
    listed = ", ".join(wanted.addresses)
    expected = f"the addresses of NVLink domain {wanted.domain}: {listed} (any order)"
    if isinstance(nodes, Unreadable):
        return unreadable_error(IMEX, "nodes_config.cfg", expected, nodes)
    missing = [a for a in wanted.addresses if a not in nodes]
    extra = [a for a in dict.fromkeys(nodes) if a not in wanted.addresses]
    twice = sorted(a for a, count in Counter(nodes).items() if count > 1)
    if not (missing or extra or twice):
        return passed(IMEX, "nodes_config.cfg", expected, ", ".join(nodes))
    problems = []
    if missing:
        problems.append("missing " + ", ".join(f"{a} ({_host_at(a, wanted)})" for a in missing))
    if extra:
        problems.append("extra " + ", ".join(extra))
    if twice:
        problems.append("listed twice " + ", ".join(twice))
    hint = (
        f"role {ROLE} writes {IMEX_NODES_CONFIG} from the inventory's domain and restarts {IMEX_UNIT} "
        f"(it reads the file only at start-up); on this host: fix the file, then "
        f"`systemctl restart {IMEX_UNIT}`"
    )
    return failed(IMEX, "nodes_config.cfg", expected, "; ".join(problems), hint)


def _host_at(address: str, wanted: DesiredNvlinkHost) -> str:
    named = dict(zip(wanted.addresses, wanted.members, strict=False))
    return named.get(address, "no member")


def _judge_domain(
    status: ImexStatus | Unreadable | None, wanted: DesiredNvlinkHost, active: str | Unreadable
) -> list[Finding]:
    size = len(wanted.members)
    expected = f"{size} IMEX node(s), every one READY and connected (C), Domain State UP"
    if status is None:
        actual = "nvidia-imex-ctl is not installed"
        hint = f"install the nvidia-imex package (it ships nvidia-imex-ctl) with {IMEX_UNIT}"
        return [errored(IMEX, "IMEX domain", expected, actual, hint)]
    if isinstance(status, Unreadable):
        if active != "active":
            reason = f"{IMEX_UNIT} is not active here: `nvidia-imex-ctl -N` has no daemon to ask"
            return [skipped(IMEX, "IMEX domain", reason)]
        return [unreadable_error(IMEX, "IMEX domain", expected, status)]
    hint = (
        f"on a peer named here: `systemctl status {IMEX_UNIT}` and its log (`Identified this node as ID`, "
        f"`No matching network interface`), the same {IMEX_NODES_CONFIG} on every tray, port 50000 open "
        "between the trays; then `nvidia-imex-ctl -N` again"
    )
    findings: list[Finding] = []
    problems = []
    if len(status.nodes) != size:
        problems.append(f"{len(status.nodes)} node(s), not {size}")
    if status.domain_state != "UP":
        problems.append(f"Domain State {status.domain_state or 'not shown'}")
    if problems:
        findings.append(failed(IMEX, "IMEX domain", expected, "; ".join(problems), hint))
    else:
        findings.append(passed(IMEX, "IMEX domain", expected, f"{size} node(s), Domain State UP"))
    for node in status.nodes:
        peer = _host_at(node.address, wanted)
        subject = f"IMEX node {peer if peer != 'no member' else node.address}"
        node_expected = f"node #{node.index} ({node.address}) READY and connected to every node"
        cells = _unconnected(status, node.index)
        wrong = [] if node.state == "READY" else [f"state {node.state}"]
        wrong += cells
        if peer == "no member":
            wrong.append(f"{node.address} is no member of {wanted.domain}")
        if wrong:
            findings.append(failed(IMEX, subject, node_expected, "; ".join(wrong), hint))
        else:
            findings.append(passed(IMEX, subject, node_expected, f"READY, connected ({node.address})"))
    listed = {node.address for node in status.nodes}
    for address, member in zip(wanted.addresses, wanted.members, strict=False):
        if address not in listed:
            actual = f"{address} is not in this tray's `nvidia-imex-ctl -N` node list"
            node_expected = f"{member} ({address}) a READY node, connected to every node"
            findings.append(failed(IMEX, f"IMEX node {member}", node_expected, actual, hint))
    return findings


def _unconnected(status: ImexStatus, index: int) -> list[str]:
    """The cells of a node's row and column that are not C, as `#a->#b <what>`. A READY node is blamed
    only for cells with another READY node (a cell with a node that is down is that node's): a daemon
    stopped on one tray names that tray, not every peer that lost it."""
    ready = {node.index for node in status.nodes if node.state == "READY"}
    cells = []
    for (source, target), letter in sorted(status.connections.items()):
        if index not in (source, target) or letter == CONNECTED:
            continue
        other = target if source == index else source
        if index not in ready or other in ready:
            cells.append(f"#{source}->#{target} {IMEX_LEGEND.get(letter, letter)}")
    return cells


def _judge_imex(evidence: HostEvidence, desired: DesiredHost, _i: FabricIntent, _n: Inputs) -> list[Finding]:
    assert desired.nvlink is not None  # imex_applies
    return check_imex(evidence.imex_active, evidence.imex_nodes, evidence.imex_status, desired.nvlink)


# ---- host.fabric_manager ----------------------------------------------------------------------------


def check_fabric_manager(active: str | Unreadable) -> list[Finding]:
    finding = _judge_unit(FABRIC_MANAGER, FABRIC_MANAGER_UNIT, active)
    if finding.status.value == "fail":
        hint = finding.hint + f"; its version must equal the driver's ({FM_GUIDE})"
        finding = failed(FABRIC_MANAGER, finding.subject, finding.expected, finding.actual, hint)
    return [finding]


def _judge_fabric_manager(
    evidence: HostEvidence, _desired: DesiredHost, _i: FabricIntent, _n: Inputs
) -> list[Finding]:
    return check_fabric_manager(evidence.fabric_manager_active)


NVLINK_CHECK = HostCheck(
    NVLINK,
    "host",
    "gpu",
    (probes.NVLINK_STATUS,),
    "`nvlink.gpus` GPUs, each with `nvlink.links_per_gpu` active NVLinks at `nvlink.link_gbytes` "
    "(within 0.5 %; null: every link of the host at one rate); an inactive or slow link is named",
    None,
    None,
    _judge_nvlink,
    NO_INPUTS,
    applies=nvlink_applies,
)
IMEX_CHECK = HostCheck(
    IMEX,
    "host",
    "host",
    (probes.IMEX_ACTIVE, probes.IMEX_NODES, probes.IMEX_STATUS),
    "with `nvlink.imex`: nvidia-imex active, nodes_config.cfg = the domain's addresses (missing/extra "
    "named), `nvidia-imex-ctl -N`: one node per member, each READY and connected (C), Domain State UP",
    ROLE,
    None,
    _judge_imex,
    NO_INPUTS,
    applies=imex_applies,
)
FABRIC_MANAGER_CHECK = HostCheck(
    FABRIC_MANAGER,
    "host",
    "host",
    (probes.FABRIC_MANAGER_ACTIVE,),
    "with `nvlink.fabric_manager`: nvidia-fabricmanager active (NVSwitch HGX/DGX)",
    ROLE,
    None,
    _judge_fabric_manager,
    NO_INPUTS,
    applies=fabric_manager_applies,
)
NVLINK_FABRIC_CHECK = FleetCheck(
    NVLINK_FABRIC,
    "fleet",
    "gpu",
    (probes.NVIDIA_SMI_Q,),
    "each GPU's fabric State Completed, Status Success, Health not Unhealthy, Bandwidth Full; in a "
    "multi-node domain ClusterUUID and CliqueId non-zero and one ClusterUUID.CliqueId on every GPU of "
    "every tray (the tray in the minority named)",
    None,
    None,
    _judge_nvlink_fabric,
    NO_INPUTS,
    applies=fabric_judged,
)
HOST_CHECKS = (NVLINK_CHECK, IMEX_CHECK, FABRIC_MANAGER_CHECK)
