"""Benchmark the gate at fleet scale: `fabcheck validate` natively (one ssh round trip per host) and
`--via slurm` (one srun step on the lab's real Slurm cluster), the HTML report, and site.yml's rerun, at
64 / 256 / 1,024 lab hosts; then a model for 4,096 and 16,384 hosts.

Run as root inside the CI wrapper (labs come up and down in a scratch project, never the checkout's):

    flock /tmp/fabcheck-lab.lock .ci/lab-wrapper.sh .venv/bin/python bench/scale.py \\
        [--hosts 64 256 1024] [--site-max-hosts 64] [--native-max-hosts 1024] [--concurrency N]

Per host count: one RoCE lab in factory state (no role has run: passes, failures and skips all occur),
`fabcheck lab up` timed, the lab's Slurm cluster up (lab/src/fabcheck_lab/slurm.py) timed, then
- native: `fabcheck validate --stages host --json --concurrency C`;
- native saves its snapshot (`--save-snapshot`; untimed when native is not measured at that size);
- slurm: the same with `--via slurm` (SLURM_CONF of the lab), each node judging itself with this
  checkout's fabcheck (`--node-fabcheck`, node_fabcheck below); its JSON must equal native's, line for
  line (else the bench exits 1); its stderr says how many nodes judged themselves;
- replay: `--from-snapshot --json` of native's snapshot (parse + judge + report of every host, no
  collection) and the same with `--html` (the difference is the HTML render);
- site.yml: `ansible-playbook site.yml --limit gpu_hosts` twice (converge, then the idempotent rerun),
  only up to --site-max-hosts.
Figures: wall, controller CPU (user + system of the run's process tree: fabcheck, its ssh clients or
srun), peak RSS (the largest process of the tree, fabcheck itself), slurmctld CPU (on a real cluster
it runs on the Slurm controller, not here), lab CPU (everything else in the wrapper's PID namespace:
sshd sessions, slurmd/slurmstepd, the scripts and the mock tools), each per host. Ratios are against
the smallest host count (per-host cost flat or falling) and native (slurm / native).
The 2 cores are shared: wall time moves with the load, the CPU figures much less.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fabcheck.gate.fabric import DEFAULT_CONCURRENCY
from fabcheck_lab import procs, slurm
from fabcheck_lab.state import LabPaths, project_root

REPO = project_root()
sys.path[:0] = [str(REPO / "bench")]
import site_rerun  # noqa: E402 - a sibling bench script: scratch lab, namespace CPU, site.yml play

VENV_BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 1800.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A loaded lab must not time out: at 1,024 hosts every node's own judge (a Python start each, on the
# lab's 2 cores) stretches the one srun step to minutes, and the step's limit follows --timeout.
GENEROUS = ("--timeout", "1800", "--connect-timeout", "120")
GOAL_NATIVE_MS, GOAL_SLURM_MS, GOAL_RSS_MB, GOAL_SITE_S = 50.0, 10.0, 1024.0, 0.5  # issue 26


@dataclass(frozen=True)
class Timed:
    label: str
    hosts: int
    wall_s: float
    cpu_s: float  # the run's process tree
    rss_mb: float  # peak RSS of the tree's largest process
    ctld_cpu_s: float  # slurmctld during the run
    lab_cpu_s: float  # the rest of the namespace during the run
    exit_code: int
    stdout: str
    stderr: str = ""

    @property
    def cpu_ms_per_host(self) -> float:
        return 1000 * self.cpu_s / self.hosts

    @property
    def wall_ms_per_host(self) -> float:
        return 1000 * self.wall_s / self.hosts

    def marginal_ms(self, start: Timed) -> float:
        """CPU per host beyond the interpreter start and imports every run pays once."""
        return 1000 * max(0.0, self.cpu_s - start.cpu_s) / self.hosts


def slurmctld_cpu_s() -> float:
    ticks = 0
    for pid in procs.pids_mentioning("slurmctld"):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / CLOCK_TICKS


def timed(label: str, hosts: int, argv: list[str], env: dict[str, str]) -> Timed:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        namespace_before, ctld_before = site_rerun.namespace_cpu_s(), slurmctld_cpu_s()
        own = resource.getrusage(resource.RUSAGE_SELF)
        began = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        mine = resource.getrusage(resource.RUSAGE_SELF)
        own_s = (mine.ru_utime - own.ru_utime) + (mine.ru_stime - own.ru_stime)
        cpu = usage.ru_utime + usage.ru_stime
        ctld = slurmctld_cpu_s() - ctld_before
        lab = site_rerun.namespace_cpu_s() - namespace_before - cpu - ctld - own_s
        out.seek(0)
        text = out.read().decode(errors="replace")
        err.seek(0)
        said = err.read()[-20000:].decode(errors="replace")
    exit_code = os.waitstatus_to_exitcode(status)
    run = Timed(label, hosts, wall, cpu, usage.ru_maxrss / 1024, ctld, lab, exit_code, text, said)
    print(
        f"  {hosts} hosts, {label}: {wall:.1f} s, CPU {cpu:.1f} s ({run.cpu_ms_per_host:.1f} ms/host), "
        f"RSS {run.rss_mb:.0f} MB, slurmctld {ctld:.1f} s, lab {lab:.1f} s, exit {run.exit_code}",
        file=sys.stderr,
    )
    return run


def validate_argv(paths: LabPaths, *options: str) -> list[str]:
    inventory = str(paths.inventory.parent)
    return [str(VENV_BIN / "fabcheck"), "validate", "-i", inventory, "--stages", "host", *GENEROUS, *options]


@dataclass(frozen=True)
class Scale:
    hosts: int
    lab_up_s: float
    slurm_up_s: float
    runs: dict[str, Timed]
    start: Timed  # `fabcheck validate --help`: the interpreter start and the CLI's imports
    identical: bool | None  # slurm's JSON == native's (None: native not run)
    judged_on_nodes: int  # hosts of the slurm snapshot whose node judged itself
    html_s: float | None
    site: tuple[site_rerun.Run, site_rerun.Run] | None
    site_error: str | None = None
    sweep: tuple[Timed, ...] = ()  # native at each --sweep concurrency
    site_profile: tuple[str, ...] = ()  # the rerun's slowest tasks (profile_tasks)


def one_scale(hosts: int, args: argparse.Namespace) -> Scale:
    began = time.perf_counter()
    with site_rerun.scratch_lab(hosts) as paths:
        lab_up = time.perf_counter() - began
        cluster = slurm.up(paths, timeout_s=max(slurm.UP_TIMEOUT_S, hosts * 0.5))
        print(f"  {hosts} hosts: lab up {lab_up:.1f} s, Slurm up {cluster.seconds:.1f} s", file=sys.stderr)
        env = cluster.env()
        env.pop("SLURM_JOB_ID", None)
        runs: dict[str, Timed] = {}
        helping = [str(VENV_BIN / "fabcheck"), "validate", "--help"]
        start = timed("start (validate --help)", hosts, helping, env)
        concurrency = ("--concurrency", str(args.concurrency))
        identical = None
        # In /var/tmp: the lab nodes see the machine's root file system, but a /tmp of their own.
        with tempfile.TemporaryDirectory(prefix="fabcheck-bench-scale-", dir="/var/tmp") as scratch:
            saved = Path(scratch) / "snapshot"
            if hosts <= args.native_max_hosts:
                # It saves the snapshot the replay rows judge again (its RSS holds every raw output).
                saving = validate_argv(paths, "--json", *concurrency, "--save-snapshot", str(saved))
                runs["native"] = timed("native + --save-snapshot", hosts, saving, env)
            else:
                subprocess.run(
                    validate_argv(paths, "--json", *concurrency, "--save-snapshot", str(saved)),
                    env=env, cwd=REPO, capture_output=True, timeout=RUN_TIMEOUT_S, check=False,
                )  # fmt: skip
            # No --save-snapshot here: it would ask the nodes for their raw sections too.
            via = ("--via", "slurm", "--node-fabcheck", str(node_fabcheck(Path(scratch), paths)))
            runs["slurm"] = timed("slurm", hosts, validate_argv(paths, "--json", *via), env)
            if "native" in runs:
                identical = _lines(runs["native"]) == _lines(runs["slurm"])
                if not identical:
                    _show_difference(hosts, runs["native"], runs["slurm"])
            judged = judged_hosts(runs["slurm"].stderr, hosts)
            print(f"  {hosts} hosts: {judged} judged on their node", file=sys.stderr)
            replay = validate_argv(paths, "--from-snapshot", str(saved))
            runs["replay"] = timed("replay (parse + judge + JSON)", hosts, [*replay, "--json"], env)
            page = str(Path(scratch) / "gate.html")
            runs["replay+html"] = timed("replay + --html", hosts, [*replay, "--json", "--html", page], env)
        html_s = runs["replay+html"].wall_s - runs["replay"].wall_s
        sweep: tuple[Timed, ...] = ()
        if hosts in args.sweep_at:
            sweep = tuple(
                timed(
                    f"native --concurrency {c}",
                    hosts,
                    validate_argv(paths, "--json", "--concurrency", str(c)),
                    env,
                )
                for c in args.sweep
            )
        site, site_error, profile = None, None, ()
        if hosts <= args.site_max_hosts:
            try:
                first = site_rerun.play(paths, "first run", hosts)
                rerun = site_rerun.play(paths, "rerun", hosts)
                site = (first, rerun)
                profile = profiled_rerun(paths)
            except SystemExit:  # site_rerun.BenchFailed printed why
                site_error = "site.yml did not converge and rerun cleanly (see stderr)"
        slurm.down(paths)
    return Scale(
        hosts,
        lab_up,
        cluster.seconds,
        runs,
        start,
        identical,
        judged,
        html_s,
        site,
        site_error,
        sweep,
        profile,
    )


JUDGE_SLOTS = 48  # lab nodes judging at once: each judge is a Python of ~70 MB, and 1,024 of them at
# once would not fit this machine's memory (the first 1,024-host run was killed); a real node has its own


def node_fabcheck(scratch: Path, paths: LabPaths) -> Path:
    """The fabcheck each lab node judges itself with: this checkout's code and this venv's packages on
    the node's own Python (the venv's interpreter lives under the controller's /root, which a lab node
    replaces with its own home), the same major.minor as this interpreter; at most JUDGE_SLOTS at once:
    each node waits for a flock on its slot file in the lab's tools folder (bound into every node: one
    inode for all, which the nodes' own overlay roots would not give)."""
    site = Path(sysconfig.get_paths()["purelib"])
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    for slot in range(JUDGE_SLOTS):
        (paths.bin_dir / f"fabcheck-bench-slot-{slot}").touch()
    launcher = scratch / "node-fabcheck"
    # The node's slot by a hash of its name; flock waits (no polling) and the judge inherits the lock.
    launcher.write_text(
        "#!/bin/sh\n"
        'sum=$(printf %s "$SLURMD_NODENAME" | cksum)\n'
        f"slot=$(( ${{sum%% *}} % {JUDGE_SLOTS} ))\n"
        'exec 9</usr/local/bin/fabcheck-bench-slot-"$slot" && flock 9\n'
        f'PYTHONPATH={REPO}:{site} exec {python} -m fabcheck.cli "$@"\n'
    )
    launcher.chmod(0o755)
    Path(scratch).chmod(0o755)
    return launcher


def judged_hosts(stderr: str, hosts: int) -> int:
    """How many nodes judged themselves, as the --via slurm run says on stderr (0: it did not say)."""
    said = re.search(rf"--via slurm: (\d+) of {hosts} nodes judged themselves", stderr)
    return int(said.group(1)) if said else 0


def profiled_rerun(paths: LabPaths, top: int = 12) -> tuple[str, ...]:
    """One more rerun with ansible-core's junit callback (ansible.posix's profile_tasks is not installed
    here): per task, the wall from its start to the last host's result, and its share of the rerun."""
    import xml.etree.ElementTree as ElementTree

    with tempfile.TemporaryDirectory(prefix="fabcheck-bench-junit-") as junit:
        argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(paths.inventory.parent), str(REPO / "site.yml")]
        env = os.environ | {
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.junit",
            "JUNIT_OUTPUT_DIR": junit,
        }
        began = time.perf_counter()
        subprocess.run(
            [*argv, "--limit", "gpu_hosts"], cwd=REPO, env=env, capture_output=True, timeout=RUN_TIMEOUT_S
        )
        wall = time.perf_counter() - began
        per_task: dict[str, float] = {}
        for report in Path(junit).glob("*.xml"):
            for case in ElementTree.parse(report).iter("testcase"):
                task = re.sub(r"^\[[^]]*\] ", "", case.get("name") or "?")  # "[gpu01] role : task"
                per_task[task] = max(per_task.get(task, 0.0), float(case.get("time") or 0.0))
    ranked = sorted(per_task.items(), key=lambda item: -item[1])
    lines = [f"rerun {wall:.1f} s wall, {len(per_task)} tasks; slowest (s from start to last host):"]
    lines += [f"{seconds:7.2f}  {task}" for task, seconds in ranked[:top]]
    lines.append(f"{sum(per_task.values()):7.2f}  all tasks together")
    return tuple(lines)


def _show_difference(hosts: int, native: Timed, via_slurm: Timed) -> None:
    """The first lines where the engines disagree, and both outputs kept for a closer look."""
    kept = Path(tempfile.gettempdir()) / f"fabcheck-bench-scale-{hosts}"
    kept.mkdir(exist_ok=True)
    (kept / "native.jsonl").write_text(native.stdout)
    (kept / "slurm.jsonl").write_text(via_slurm.stdout)
    pairs = zip(_lines(native), _lines(via_slurm), strict=False)
    differing = [(a, b) for a, b in pairs if a != b]
    print(f"  {hosts} hosts: {len(differing)} JSON lines differ (both kept in {kept})", file=sys.stderr)
    for a, b in differing[:3]:
        print(f"    native: {json.dumps(a)[:300]}\n    slurm:  {json.dumps(b)[:300]}", file=sys.stderr)


def _lines(run: Timed) -> list[dict]:
    """The run's JSON lines, with the one figure two runs cannot share: the bits a lab link received in
    the counter window (host.link_errors quotes them; they grow while the link is up)."""
    steady = re.sub(r"rx_bits_phy \+[0-9]+", "rx_bits_phy +N", run.stdout)
    return [json.loads(line) for line in steady.splitlines() if line.startswith("{")]


def table(scales: list[Scale]) -> str:
    base = scales[0]
    lines = [
        "| hosts | engine | wall | controller CPU (ms/host; beyond start) | peak RSS | slurmctld CPU "
        f"| lab CPU | marginal CPU/host vs {base.hosts} hosts | CPU vs native |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for scale in scales:
        for label in ("native", "slurm", "replay"):
            run = scale.runs.get(label)
            if run is None:
                continue
            against = base.runs.get(label)
            marginal = run.marginal_ms(scale.start)
            base_ms = against.marginal_ms(base.start) if against else 0.0
            flat = f"{marginal / base_ms:.2f}x" if base_ms else "-"
            native = scale.runs.get("native")
            vs = f"{run.cpu_s / native.cpu_s:.2f}x" if native and label != "native" else "-"
            lines.append(
                f"| {scale.hosts} | {run.label} | {run.wall_s:.1f} s | {run.cpu_s:.1f} s "
                f"({run.cpu_ms_per_host:.1f}; {marginal:.1f}) | {run.rss_mb:.0f} MB | {run.ctld_cpu_s:.1f} s "
                f"| {run.lab_cpu_s:.1f} s | {flat} | {vs} |"
            )
    lines += [
        "",
        "| hosts | lab up | Slurm up | JSON slurm == native | judged on the node | HTML render "
        "| site.yml first / rerun (s/host) |",
    ]
    lines.append("|---|---|---|---|---|---|---|")
    for scale in scales:
        same = {None: "native not run", True: "identical", False: "DIFFERENT"}[scale.identical]
        site = scale.site_error or "not run"
        if scale.site is not None:
            first, rerun = scale.site
            site = f"{first.wall_s:.0f} s / {rerun.wall_s:.0f} s ({rerun.wall_s / scale.hosts:.2f})"
        html = "-" if scale.html_s is None else "< 0.05 s" if scale.html_s < 0.05 else f"{scale.html_s:.2f} s"
        lines.append(
            f"| {scale.hosts} | {scale.lab_up_s:.0f} s | {scale.slurm_up_s:.0f} s | {same} "
            f"| {scale.judged_on_nodes} of {scale.hosts} | {html} | {site} |"
        )
    start = ", ".join(f"{s.hosts}: {s.start.cpu_s:.2f} s" for s in scales)
    lines += ["", f"start (interpreter + imports, `fabcheck validate --help`) CPU: {start}"]
    for scale in scales:
        if scale.sweep:
            lines += ["", f"native --concurrency sweep at {scale.hosts} hosts:", ""]
            lines += ["| concurrency | wall | controller CPU | lab CPU |", "|---|---|---|---|"]
            lines += [
                f"| {r.label.split()[-1]} | {r.wall_s:.1f} s | {r.cpu_s:.1f} s | {r.lab_cpu_s:.1f} s |"
                for r in scale.sweep
            ]
        if scale.site_profile:
            lines += ["", f"site.yml rerun at {scale.hosts} hosts, per task (junit callback):", "```"]
            lines += [*scale.site_profile, "```"]
    return "\n".join(lines)


def model(scales: list[Scale], concurrency: int, cores: int) -> str:
    """Per-host cost x hosts / parallelism, from the largest measured run of each engine."""
    largest = scales[-1]
    native = next((s.runs["native"] for s in reversed(scales) if "native" in s.runs), None)
    via = largest.runs["slurm"]
    # A host's own collection, measured where the lab was least loaded: the smallest run's replay-free
    # wall per host times the concurrency (hosts in flight) bounds it from above.
    first = scales[0]
    host_s = 1.0
    if "native" in first.runs:
        in_flight = min(concurrency, first.hosts)
        host_s = max(0.0, first.runs["native"].wall_s - first.start.wall_s) * in_flight / first.hosts
    lines = [
        f"Model (controller: {cores} cores; native --concurrency {concurrency}; a host's own collection "
        f"<= {host_s:.2f} s, from the {scales[0].hosts}-host run; real hosts run their scripts in parallel):",
        "",
        "| hosts | engine | controller CPU | wall bound by CPU | wall bound by hosts in flight | bound |",
        "|---|---|---|---|---|---|",
    ]
    for hosts in (4096, 16384):
        if native is not None:
            cpu = native.marginal_ms(_start_of(scales, native)) / 1000 * hosts
            by_cpu, by_flight = cpu / cores, hosts / concurrency * host_s
            bound = "controller CPU (ssh key exchange + script)" if by_cpu > by_flight else "--concurrency"
            lines.append(f"| {hosts} | native | {cpu:.0f} s | {by_cpu:.0f} s | {by_flight:.0f} s | {bound} |")
        cpu = via.marginal_ms(largest.start) / 1000 * hosts
        # One reader thread demultiplexes srun's stream and the merging runs under one GIL: one core. The
        # replay row is native's raw snapshot judged again: not the merge of nodes that judged themselves.
        lines.append(
            f"| {hosts} | slurm | {cpu:.0f} s | {cpu:.0f} s (one Python process: GIL) | {host_s:.1f} s + "
            "Slurm's launch | controller Python (the nodes' judgements read back, fleet checks, report) |"
        )
    return "\n".join(lines)


def _start_of(scales: list[Scale], run: Timed) -> Timed:
    return next(s.start for s in scales if s.hosts == run.hosts)


def verdicts(scales: list[Scale]) -> list[str]:
    out = []
    largest = scales[-1]
    native = largest.runs.get("native")
    via = largest.runs["slurm"]
    # Judged on the whole run's CPU per host (start included), as the 155 ms was measured.
    for run, goal in ((native, GOAL_NATIVE_MS), (via, GOAL_SLURM_MS)):
        if run is None:
            continue
        ms = run.cpu_ms_per_host
        out.append(
            f"{run.label} at {largest.hosts}: {ms:.1f} ms/host controller CPU, "
            f"{run.marginal_ms(largest.start):.1f} beyond start "
            f"({'met' if ms < goal else 'MISSED'} goal {goal:.0f})"
        )
    rss = max(run.rss_mb for run in largest.runs.values())
    out.append(
        f"peak RSS at {largest.hosts}: {rss:.0f} MB ({'met' if rss < GOAL_RSS_MB else 'MISSED'} < 1 GB)"
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--site-max-hosts", type=int, default=64, help="site.yml only up to this many hosts")
    parser.add_argument("--native-max-hosts", type=int, default=1024, help="native ssh only up to this many")
    parser.add_argument(
        "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="native runs (default: fabcheck's own)"
    )
    parser.add_argument("--sweep", type=int, nargs="*", default=[8, 16, 32, 64], help="native concurrencies")
    parser.add_argument("--sweep-at", type=int, nargs="*", default=[64], help="host counts to sweep at")
    args = parser.parse_args(argv)
    if os.geteuid() != 0 or not site_rerun.in_wrapper_namespace():
        print("scale: needs root inside .ci/lab-wrapper.sh", file=sys.stderr)
        return 2
    scales = []
    for hosts in sorted(args.hosts):
        try:
            scales.append(one_scale(hosts, args))
        except Exception as err:  # a size the machine cannot bring up is a figure too: say what bounds it
            print(f"  {hosts} hosts: not measured: {type(err).__name__}: {err}"[:2000], file=sys.stderr)
            break
    if not scales:
        return 1
    print(table(scales))
    print()
    print(model(scales, args.concurrency, os.cpu_count() or 1))
    print()
    for line in verdicts(scales):
        print(line)
    return 1 if any(scale.identical is False for scale in scales) else 0


if __name__ == "__main__":
    sys.exit(main())
