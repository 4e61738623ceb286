"""How a host check is declared and judged: the judge signature the host stage calls, and the shapes
most host checks share (one verdict per rail NIC's netdev, per rail NIC, per rail port).

Every judge reads the host's desired state (fabcheck.desired.nic.DesiredHost, computed once by the
gate) and never derives it; the intent is passed for what the desired record does not carry (the NCCL
GID index, the GPU-NIC link class).

A judge is generic over the inputs it reads: a check whose judge reads inputs of its own is declared
with host_check, which binds the judge and its inputs once, so the judge receives them typed."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from fabcheck.checks.declare import ALL_KINDS, Check, Inputs
from fabcheck.checks.host.evidence import HostEvidence, RailNic, present_nics, unreadable_error
from fabcheck.checks.model import Finding, errored, failed, passed
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost, DesiredNic
from fabcheck.intent.model import FabricIntent

InputsT = TypeVar("InputsT", bound=Inputs)

# evidence, the host's desired state, its intent, the declaration's inputs -> findings
HostJudge = Callable[[HostEvidence, DesiredHost, FabricIntent, InputsT], list[Finding]]
# The stage holds checks over different inputs: each declaration binds its own (host_check).
HostCheck = Check[HostJudge[Any]]
Scope = Literal["host", "nic", "port", "gpu", "boot file"]  # what one host finding judges

NetdevJudge = Callable[[str, str, HostEvidence, DesiredNic], list[Finding]]
NicsJudge = Callable[[list[RailNic], DesiredHost, InputsT], list[Finding]]


def host_check(
    check_id: str,
    scope: Scope,
    reads: tuple[str, ...],
    summary: str,
    role: str | None,
    tag: str | None,
    judge: HostJudge[InputsT],
    inputs: InputsT,
    kinds: tuple[str, ...] = ALL_KINDS,
) -> HostCheck:
    """A host check whose judge reads `inputs`: the declaration binds the two, so the judge receives
    the inputs typed (a judge that reads none takes Inputs, declared as a plain HostCheck)."""
    return HostCheck(check_id, "host", scope, reads, summary, role, tag, judge, inputs, kinds=kinds)


def per_netdev(check_id: str, check: NetdevJudge) -> HostJudge[Inputs]:
    """A judge that runs `check` (NIC, its netdev, the evidence, the NIC's desired record) on the RoCE
    netdev of every rail NIC the host shows; a NIC without a netdev is an ERROR."""

    def judge(evidence: HostEvidence, desired: DesiredHost, _i: FabricIntent, _n: Inputs) -> list[Finding]:
        findings: list[Finding] = []
        for nic in present_nics(evidence, desired):
            if nic.netdev is None:
                actual = f"`rdma link` shows no netdev for {nic.name}"
                hint = "check `rdma link` and `ibdev2netdev`"
                findings.append(errored(check_id, nic.name, "a RoCE netdev to read", actual, hint))
                continue
            findings += check(nic.name, nic.netdev, evidence, desired.nic(nic.name))
        return findings

    return judge


def per_nic(check: NicsJudge[InputsT]) -> HostJudge[InputsT]:
    """A judge over the rail NICs the host shows in both `rdma link` and `ibv_devinfo`."""
    return lambda evidence, desired, _intent, inputs: check(present_nics(evidence, desired), desired, inputs)


def per_port(
    check_id: str,
    probe: str,
    want: Callable[[DesiredHost], Any],
    shown: Callable[[Any], str],
    fix: Callable[[str, int, Any], str],
) -> HostJudge[Inputs]:
    """A judge of one value per rail port: the record of `probe` must equal `want(desired)`; `fix` is
    the hint of a failure, given the NIC, the port number and the wanted value."""

    def judge(evidence: HostEvidence, desired: DesiredHost, _i: FabricIntent, _n: Inputs) -> list[Finding]:
        wanted = want(desired)
        expected = shown(wanted)
        findings = []
        for nic in present_nics(evidence, desired):
            for link in nic.links:
                value = evidence.record(probe, link.name)
                if isinstance(value, Unreadable):
                    findings.append(unreadable_error(check_id, link.name, expected, value))
                elif value == wanted:
                    findings.append(passed(check_id, link.name, expected, shown(value)))
                else:
                    hint = fix(nic.name, link.port, wanted)
                    findings.append(failed(check_id, link.name, expected, shown(value), hint))
        return findings

    return judge


def cmd(*words: str) -> str:
    """A command line to paste: every word shell-quoted (NIC and netdev names come from the inventory
    and from the host, and may hold anything)."""
    return shlex.join(words)


def echo(value: int, path: str) -> str:
    return f"echo {value} > {shlex.quote(path)}"
