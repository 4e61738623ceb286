"""NVIDIA Cumulus Linux 5.x through NVUE: the pending revision is the transaction.

`stage` first reads `nv config diff`: a pending revision it did not open (an operator's staged
`nv set`, or a push that died) is never detached, the push stops naming it (ForeignWork). Then it
types the rendered `nv set` lines (plus `nv unset` for stale fabcheck-owned entries it finds
running); the first must answer `created [rev_id: N]` (NVUE opened our revision; silence would mean
it joined someone else's), the rest answer nothing. It returns `nv config diff`; `commit` is
`nv config apply -y`, which NVUE applies whole or not at all and answers `applied [rev_id: N]`, or
`applied_and_saved [rev_id: N]` where auto-save is on (then no `nv config save`). Auto-save is a
setting, read from the applied config (`system config auto-save`: `enable on|off` on CL 5.4-5.9,
`state enabled|disabled` from 5.10, NVIDIA's NVUE OpenAPI); only where it is not set does the
release's default stand (off before CL 5.9, on from it: NVUE command reference, nv config apply);
`discard` is `nv config detach`, sent only for the revision this push opened. Nothing reaches the
running config before the apply. The PFC watchdog commands exist from CL 5.6 (the release is read
from the switch's config header): a push of the watchdog concern to an older switch is refused.

Stale fabcheck-owned entries, found by comparing the running config with the rendered lines:
- a PFC priority of a PFC profile the config writes that the config does not list;
- an explicit DSCP entry of a mapping profile the config writes that sends a DSCP the config does
  not list to a RoCE class: a priority the config maps DSCPs to, or one the running config treats
  as a RoCE class (PFC on it, or its traffic class scheduled strict, as fabcheck does for CNPs);
- an explicit ECN entry of a congestion-control profile the config writes, for a traffic class no
  switch priority reaches under the config (so no traffic's handling depends on it);
- a bw-percent left on a traffic class the config schedules strict (meaningless there);
- a traffic class of an egress-scheduler profile the config writes that the config does not
  schedule (no switch priority reaches it): back to NVUE's default, never `bw-percent 0`, which
  NVUE refuses (1..100) and qos_features.conf reads as strict;
- a per-port mapping, congestion-control or egress-scheduler profile bound to a port the config
  manages: the push owns the effective per-port state of its ports, so it unbinds the foreign
  profile (the port falls back to default-global; the profile itself is left defined).
Anything else the config does not mention is left as it is.

Each line (rendered or stale unset) belongs to one concern by the NVUE object it writes
(`path_concern`); a push scoped to some concerns types only their lines. Before CL 5.9 the apply does
not save: a push that found running already right compares the startup revision with it, concern by
concern, and saves when it lags (a previous push lost its save).

Commands are typed one at a time on the interactive shell netmiko opened, each read back to the
prompt: a line NVUE rejects stops the push with that line and NVUE's message, and a connection
that goes away is noticed at once (PushError), not after a read timeout.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from fabcheck.errors import FabcheckError
from fabcheck.switch.concerns import ALL_CONCERNS
from fabcheck.switch.driver import NOTE_PREFIX, ForeignWork, PushError, SwitchDriver
from fabcheck.switch.owned import PORT, Setting, ends_with_id, normalise
from fabcheck.switch.render import RenderedConfig

APPLY = "nv config apply -y"  # -y: NVUE asks "Are you sure? [y/N]" when an apply has warnings
DETACH = "nv config detach"
DIFF = "nv config diff"
SAVE = "nv config save"
SHOW_CONFIG = "nv config show -o json"
SHOW_STARTUP = "nv config show --rev startup -o json"  # the saved revision, what a reboot loads
MANAGED_TOP_LEVEL = ("qos", "interface")  # what running() shows: everything fabcheck writes is below
AUTO_SAVE_SINCE = (5, 9)  # auto-save's default: on from CL 5.9 (off before), where it is not set
WATCHDOG_SINCE = (5, 6)  # `nv set qos pfc-watchdog ...` and `interface ... qos pfc-watchdog` from CL 5.6
APPLIED = re.compile(r"^(?P<verb>applied|applied_and_saved) \[rev_id: (?P<rev>\d+)\]", re.MULTILINE)
CREATED = re.compile(r"^created \[rev_id: (?P<rev>\d+)\]$")
SAVED = re.compile(r"^saved\b", re.MULTILINE)
VERSION = re.compile(r"Cumulus Linux (?P<major>\d+)\.(?P<minor>\d+)")
CONFIRMATION = re.compile(r"\[y/N\]\s*$")
POLL_S = 0.005  # between reads of a command's output: short, a push types about a hundred lines
DEFAULT_READ_TIMEOUT_S = 60.0

# The rendered lines that name fabcheck-owned entries; ids may be NVUE lists ("0,1,2", "0-2,4").
_DSCP = re.compile(r"^nv set qos mapping (?P<profile>\S+) dscp (?P<ids>\S+) switch-priority (?P<prio>\d+)$")
_SP_TO_TC = re.compile(r"^nv set qos egress-queue-mapping \S+ switch-priority \S+ traffic-class (?P<tc>\d+)$")
_PFC_PRIORITY = re.compile(r"^nv set qos pfc (?P<profile>\S+) switch-priority (?P<ids>\S+)$")
_PFC_PROFILE = re.compile(r"^nv set qos pfc (?P<profile>\S+) ")
_PORT_PFC_PROFILE = re.compile(r"^nv set interface \S+ qos pfc profile (?P<profile>\S+)$")
_ECN = re.compile(r"^nv set qos congestion-control (?P<profile>\S+) traffic-class (?P<ids>\S+) ")
_STRICT = re.compile(r"^nv set qos egress-scheduler (?P<profile>\S+) traffic-class (?P<ids>\S+) mode strict$")
_SCHEDULED = re.compile(r"^nv set qos egress-scheduler (?P<profile>\S+) traffic-class (?P<ids>\S+) mode \S+$")
_ID_RANGE = re.compile(r"(?P<first>\d+)(?:-(?P<last>\d+))?")
# Concern of an NVUE object, by its path (the words after `nv set`, or keys of the config tree).
_QOS_CONCERNS = {
    "mapping": "dscp",  # trust and DSCP -> switch priority
    "egress-queue-mapping": "dscp",  # switch priority -> traffic class
    "pfc": "pfc",
    "congestion-control": "ecn",
    "egress-scheduler": "scheduler",
    "pfc-watchdog": "watchdog",
    "traffic-pool": "buffers",  # the lossless pool PFC needs (NVIDIA: Flow Control Buffers)
}
_INTERFACE_CONCERNS = {
    ("qos", "pfc"): "pfc",
    ("qos", "pfc-watchdog"): "watchdog",
    ("link", "mtu"): "mtu",
    ("qos", "mapping"): "dscp",
    ("qos", "congestion-control"): "ecn",
    ("qos", "egress-scheduler"): "scheduler",
}
# Per-port profile bindings the push owns on its ports (a foreign one is unbound).
PORT_PROFILE_FEATURES = ("mapping", "congestion-control", "egress-scheduler")
_INTERFACE_LINE = re.compile(r"^nv set interface (?P<ports>\S+) ")


class NvueCommandError(FabcheckError):
    """NVUE refused a command, or answered it in a way that does not say it succeeded."""


class _ConnectionLost(Exception):
    """The SSH channel closed under a command."""


def release_of(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of "Cumulus Linux 5.11.0"; None when the header does not say."""
    found = VERSION.search(version or "")
    return None if found is None else (int(found["major"]), int(found["minor"]))


def auto_save_setting(tree: Mapping[str, Any]) -> bool | None:
    """`system config auto-save` of an applied config tree: True/False where it is set (`enable
    on|off`, CL 5.4-5.9; `state enabled|disabled`, 5.10+), None where it is not; NvueCommandError for
    a value neither form has."""
    node = _subtree(_mapping(tree.get("system")), "config", "auto-save")
    for key, on, off in (("state", "enabled", "disabled"), ("enable", "on", "off")):
        if key in node:
            if node[key] not in (on, off):
                raise NvueCommandError(
                    f"system config auto-save {key} {str(node[key])[:40]!r} is not {on} or {off}"
                )
            return bool(node[key] == on)
    return None


def needs_save(version: str | None, tree: Mapping[str, Any] | None = None) -> bool:
    """Whether `nv config apply` leaves the startup config behind: auto-save off in the applied config
    `tree`, or not set there and the release's default off (CL before 5.9, or a release unknown)."""
    setting = auto_save_setting(tree or {})
    if setting is not None:
        return not setting
    release = release_of(version)
    return release is None or release < AUTO_SAVE_SINCE


def has_watchdog(version: str | None) -> bool:
    """Whether NVUE has the PFC watchdog commands (CL 5.6 and later)."""
    release = release_of(version)
    return release is not None and release >= WATCHDOG_SINCE


@dataclass
class RenderedKeys:
    """What the rendered lines set, for finding stale fabcheck-owned entries on the switch."""

    dscp: dict[str, dict[int, int]] = field(default_factory=dict)  # mapping profile -> dscp -> prio
    pfc: dict[str, set[int]] = field(default_factory=dict)  # PFC profile -> priorities
    ecn: dict[str, set[int]] = field(default_factory=dict)  # congestion-control profile -> TCs
    strict: dict[str, set[int]] = field(default_factory=dict)  # egress-scheduler profile -> TCs
    scheduled: dict[str, set[int]] = field(default_factory=dict)  # egress-scheduler profile -> TCs
    used_traffic_classes: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, lines: Iterable[str]) -> RenderedKeys:
        keys = cls()
        for line in lines:
            if found := _DSCP.match(line):
                for dscp in _ids(found["ids"], line):
                    keys.dscp.setdefault(found["profile"], {})[dscp] = int(found["prio"])
            elif found := _SP_TO_TC.match(line):
                keys.used_traffic_classes.add(int(found["tc"]))
            elif found := _PFC_PRIORITY.match(line):
                keys.pfc.setdefault(found["profile"], set()).update(_ids(found["ids"], line))
            elif found := _PFC_PROFILE.match(line) or _PORT_PFC_PROFILE.match(line):
                keys.pfc.setdefault(found["profile"], set())
            elif found := _ECN.match(line):
                keys.ecn.setdefault(found["profile"], set()).update(_ids(found["ids"], line))
            elif found := _SCHEDULED.match(line):
                keys.scheduled.setdefault(found["profile"], set()).update(_ids(found["ids"], line))
                if _STRICT.match(line):
                    keys.strict.setdefault(found["profile"], set()).update(_ids(found["ids"], line))
        return keys


def _ids(token: str, line: str) -> set[int]:
    """NVUE's numeric id list ("3", "0,1,2", "0-2,6") as numbers."""
    numbers: set[int] = set()
    for part in token.split(","):
        found = _ID_RANGE.fullmatch(part)
        if found is None:
            raise NvueCommandError(f"not a list of numbers: {token!r} in rendered line {line!r}")
        first, last = int(found["first"]), int(found["last"] or found["first"])
        numbers.update(range(first, last + 1))
    return numbers


def path_concern(path: Sequence[str]) -> str | None:
    """The concern of an NVUE object path ("qos", "pfc", ...), None for one fabcheck does not write."""
    if len(path) >= 2 and path[0] == "qos":
        return _QOS_CONCERNS.get(path[1])
    if len(path) >= 4 and path[0] == "interface":
        return _INTERFACE_CONCERNS.get((path[2], path[3]))
    return None


def line_concern(line: str) -> str:
    """The concern of an `nv set`/`nv unset` line; NvueCommandError for a line of no concern."""
    concern = path_concern(line.split()[2:])
    if concern is None:
        raise NvueCommandError(f"`{line}` writes no object of a known concern (see path_concern)")
    return concern


def scoped_lines(lines: Iterable[str], concerns: frozenset[str]) -> list[str]:
    """Pure: the lines of `concerns`, in order."""
    return [line for line in lines if line_concern(line) in concerns]


def _leaves(tree: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, (*path, str(key)))
        else:
            yield (*path, str(key)), value


def startup_differences(
    startup: Mapping[str, Any],
    running: Mapping[str, Any],
    concerns: frozenset[str],
    owned: Callable[[Sequence[str]], bool] = lambda _path: True,
) -> list[str]:
    """Pure: the objects of `concerns` (and `owned`: owned_paths) whose saved value differs from the
    applied one, as `path: startup -> running` lines ('' for an absent object)."""

    def scoped(tree: Mapping[str, Any]) -> dict[tuple[str, ...], Any]:
        return {
            path: value for path, value in _leaves(tree) if path_concern(path) in concerns and owned(path)
        }

    saved, applied = scoped(startup), scoped(running)
    return [
        f"{' '.join(path)}: {saved.get(path, '')} -> {applied.get(path, '')}"
        for path in sorted(saved.keys() | applied.keys())
        if saved.get(path) != applied.get(path)
    ]


# What the gate reads to see a startup revision that lags the applied one (a push killed between
# apply and save on CL < 5.9): the applied and the startup config, in that order.
STARTUP_LAG_PROBES = (SHOW_CONFIG, SHOW_STARTUP)


def startup_lag_lines(applied_output: str, startup_output: str, rendered: str) -> list[str]:
    """Pure, for the gate: `path: startup -> applied` for each object a push of `rendered` owns
    (owned_paths) whose saved value differs from the applied one; [] = a reboot keeps what runs. An
    unmanaged port or an operator's own profile is no push's: its unsaved change is left to its owner."""
    trees = []
    for command, output in zip(STARTUP_LAG_PROBES, (applied_output, startup_output), strict=True):
        found = _set_document(output, command)
        trees.append({key: value for key, value in found.items() if key in MANAGED_TOP_LEVEL})
    applied, startup = trees
    return startup_differences(startup, applied, ALL_CONCERNS, owned_paths(rendered.splitlines()))


def stale_unsets(lines: Iterable[str], running: Mapping[str, Any]) -> list[str]:
    """`nv unset` lines for the stale fabcheck-owned entries of `running` (see the module doc)."""
    keys = RenderedKeys.of(lines)
    qos = _mapping(running.get("qos"))
    unsets: list[str] = []
    running_roce_classes = _running_strict_priorities(qos)
    for profile, wanted in sorted(keys.pfc.items()):
        have = _int_keys(_subtree(qos, "pfc", profile, "switch-priority"))
        running_roce_classes |= have
        unsets += [f"nv unset qos pfc {profile} switch-priority {prio}" for prio in sorted(have - wanted)]
    for profile, wanted_dscp in sorted(keys.dscp.items()):
        roce_classes = set(wanted_dscp.values()) | running_roce_classes
        entries = _subtree(qos, "mapping", profile, "dscp")
        for dscp in sorted(_int_keys(entries) - set(wanted_dscp)):
            if _mapping(entries.get(str(dscp))).get("switch-priority") in roce_classes:
                unsets.append(f"nv unset qos mapping {profile} dscp {dscp}")
    if keys.used_traffic_classes:
        for profile, wanted_tc in sorted(keys.ecn.items()):
            have = _int_keys(_subtree(qos, "congestion-control", profile, "traffic-class"))
            for tc in sorted(have - wanted_tc - keys.used_traffic_classes):
                unsets.append(f"nv unset qos congestion-control {profile} traffic-class {tc}")
    for profile, scheduled in sorted(keys.scheduled.items()):
        classes = _subtree(qos, "egress-scheduler", profile, "traffic-class")
        for tc in sorted(_int_keys(classes) - scheduled):
            unsets.append(f"nv unset qos egress-scheduler {profile} traffic-class {tc}")
    for profile, strict in sorted(keys.strict.items()):
        classes = _subtree(qos, "egress-scheduler", profile, "traffic-class")
        for tc in sorted(strict):
            if "bw-percent" in _mapping(classes.get(str(tc))):
                unsets.append(f"nv unset qos egress-scheduler {profile} traffic-class {tc} bw-percent")
    interfaces = _mapping(running.get("interface"))
    for port in managed_ports(lines):
        port_qos = _subtree(interfaces, port, "qos")
        for feature in PORT_PROFILE_FEATURES:
            bound = _mapping(port_qos.get(feature)).get("profile")
            if bound and bound != "default-global":
                unsets.append(f"nv unset interface {port} qos {feature} profile")
    return unsets


def managed_ports(lines: Iterable[str]) -> list[str]:
    """The ports the rendered lines configure (`nv set interface swp1,swp2 ...`), in order."""
    ports: dict[str, None] = {}
    for line in lines:
        if found := _INTERFACE_LINE.match(line):
            ports.update(dict.fromkeys(found["ports"].split(",")))
    return list(ports)


def _running_strict_priorities(qos: Mapping[str, Any]) -> set[int]:
    """Priorities the running default-global profiles send to a strict traffic class."""
    classes = _subtree(qos, "egress-scheduler", "default-global", "traffic-class")
    strict = {int(tc) for tc in _int_keys(classes) if _mapping(classes.get(str(tc))).get("mode") == "strict"}
    to_tc = _subtree(qos, "egress-queue-mapping", "default-global", "switch-priority")
    return {
        prio for prio in _int_keys(to_tc) if _mapping(to_tc.get(str(prio))).get("traffic-class") in strict
    }


def _subtree(tree: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    for key in path:
        tree = _mapping(tree.get(key))
    return tree


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int_keys(value: Any) -> set[int]:
    return {int(key) for key in _mapping(value) if str(key).isdigit()}


# -- what a push writes, as owned-field keys (fabcheck.switch.owned) ---------------------------------

# The NVUE collections keyed by ids, and the placeholder each id becomes in a key.
KEYED: Mapping[str, str] = {
    "interface": PORT,
    "dscp": "<d>",
    "pcp": "<pcp>",
    "switch-priority": "<p>",
    "traffic-class": "<tc>",
    "traffic-pool": "<pool>",
}
# What the driver writes beyond any render: it unbinds a foreign per-port profile of these features
# from every managed port (`stale_unsets`).
DRIVER_OWNED = tuple(f"interface {PORT} qos {feature} profile" for feature in PORT_PROFILE_FEATURES)


def settings(text: str, ports: Iterable[str]) -> set[Setting]:
    """Each setting of `nv set`/`nv unset` lines, or of a `nv config show -o json` answer (its `set`
    document), with its key: the object path, ids as placeholders (`interface <port> link mtu`,
    `qos pfc default-global switch-priority <p>`). An `nv unset` keys the subtree it removes."""
    managed = set(ports)
    if text.lstrip().startswith(("[", "{")):
        return {
            (field, f"{' '.join(path)} = {value}")
            for path, value in _leaves(_set_document(text))
            for field in normalise(path, KEYED, managed)
        }
    found: set[Setting] = set()
    for line in text.splitlines():
        words = line.split()
        if words[:2] not in (["nv", "set"], ["nv", "unset"]):
            continue
        path = words[2:]
        if words[1] == "set" and not ends_with_id(path, KEYED):
            path = path[:-1]  # the value
        found |= {(field, line) for field in normalise(path, KEYED, managed)}
    return found


def _set_document(output: str, command: str = "nv config show -o json") -> Mapping[str, Any]:
    """The config tree of a `nv config show -o json` answer: its `set` document (a bare tree too)."""
    try:
        documents = json.loads(output)
    except ValueError:
        raise NvueCommandError(f"`{command}` did not print JSON: {output.strip()[:200]!r}") from None
    found: Mapping[str, Any] = {}
    for document in documents if isinstance(documents, list) else [documents]:
        if isinstance(document, dict) and isinstance(document.get("set"), dict):
            found = document["set"]
        elif isinstance(document, dict) and "header" not in document:
            found = document
    return found


def owned_paths(lines: Sequence[str]) -> Callable[[Sequence[str]], bool]:
    """Whether a push of `lines` owns an object of the config tree: its key is one the lines write or
    one the driver unsets (DRIVER_OWNED), on a port the lines manage."""
    ports = managed_ports(lines)
    keys = {field.field for field, _ in settings("\n".join(lines), ports)} | set(DRIVER_OWNED)
    return lambda path: all(field.field in keys for field in normalise(path, KEYED, ports))


class NvueDriver(SwitchDriver):
    platform = "nvue"

    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        self.switch = str(getattr(connection, "host", "") or "switch")
        self.version: str | None = None  # "Cumulus Linux 5.11.0", from the config header
        self.committed = False  # after a successful apply a lost connection leaves the new config
        self.last_step = ""  # a stage right after a commit verifies that push; any other starts one
        self.own_revision: int | None = None  # the pending revision this push opened (only it is detached)
        self.saved_by_apply = False  # the apply answered applied_and_saved (auto-save)
        self.applied_unsaved = False  # the apply answered plain `applied`: whatever the setting, unsaved
        self.auto_save: bool | None = None  # `system config auto-save` of the applied config, when set

    locks = True

    def lock_shell(self, command: str) -> str:
        return self._exchange(command).strip()

    # -- the SwitchDriver interface ---------------------------------------------------------------
    def running(self) -> str:
        managed = {key: value for key, value in self.config_tree().items() if key in MANAGED_TOP_LEVEL}
        return yaml.safe_dump([{"set": managed}], sort_keys=True, default_flow_style=False).rstrip("\n")

    def stage(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        if config.platform != self.platform:
            raise NvueCommandError(f"{config.switch}: a {config.platform} config cannot go to an NVUE switch")
        self.switch = config.switch
        if self.last_step != "commit":
            self.committed = False  # a new push on this connection
            self.saved_by_apply = self.applied_unsaved = False
        self.last_step = "stage"
        lines = config.lines
        foreign = [line for line in lines if not line.startswith(("nv set ", "nv unset "))]
        if foreign:
            raise NvueCommandError(f"{config.switch}: not an `nv set`/`nv unset` line: {foreign[0]!r}")
        self.own_revision = None
        pending = self.command(DIFF).strip("\n")
        inherited = self.lock.inherited if self.lock is not None else ()
        if pending.strip() and not any(tag.startswith(f"{NOTE_PREFIX}nvue-rev-") for tag in inherited):
            raise self._foreign(pending)
        # Empty (nothing staged to lose), or what a push of ours left when it died holding the lock.
        self.command(DETACH)
        # Stale entries are judged against the whole rendered config, then scoped like the rest.
        typed = scoped_lines(lines + stale_unsets(lines, self.config_tree()), concerns)
        watchdog = [line for line in typed if line_concern(line) == "watchdog"]
        if watchdog and not has_watchdog(self.version):
            raise NvueCommandError(
                f"{config.switch} runs {self.version or 'a Cumulus Linux release it does not name'}: NVUE "
                f"has the PFC watchdog commands from Cumulus Linux {'.'.join(map(str, WATCHDOG_SINCE))} on "
                f"(`{watchdog[0]}`); upgrade the switch, or push without the watchdog concern "
                "(--skip-tags watchdog) and accept that the gate fails switch.watchdog"
            )
        for index, line in enumerate(typed):
            output = self.command(line).strip()
            if index == 0:
                created = CREATED.fullmatch(output)
                if created is None:
                    raise self._foreign(
                        self.command(DIFF).strip("\n"),
                        f"(it appeared while this push started: `{line}` joined it)",
                    )
                self.own_revision = int(created["rev"])
                if self.lock is not None:
                    self.lock.note(f"nvue-rev-{self.own_revision}")
        if not typed:
            return ""
        return self.command(DIFF).strip("\n")

    def _foreign(self, pending: str, when: str = "") -> ForeignWork:
        shown = "\n".join(pending.splitlines()[:40])
        return ForeignWork(
            f"{self.switch}: a pending NVUE revision that this push did not open holds staged changes "
            f"{when + ' ' if when else ''}(`{DIFF}`):\n{shown}\nfabcheck never discards someone's staged "
            f"work: apply it (`{APPLY}`) or drop it (`{DETACH}`) on the switch, then rerun the push",
            rolled_back=True,
        )

    def commit(self) -> None:
        output = self.command(APPLY)
        applied = APPLIED.search(output)
        if not applied:
            raise NvueCommandError(
                f"{self.switch}: `{APPLY}` did not apply: {output.strip() or '(no output)'}"
            )
        self.committed = True
        self.saved_by_apply = applied["verb"] == "applied_and_saved"
        self.applied_unsaved = not self.saved_by_apply
        self.own_revision = None
        self.last_step = "commit"

    def discard(self) -> None:
        if self.own_revision is not None:  # never someone else's pending revision
            self.command(DETACH)
            self.own_revision = None
        self.last_step = "discard"

    def needs_save(self) -> bool:
        """After an apply its answer says it (applied_and_saved or not); before one, the switch's
        auto-save setting (read with the applied config), else its release's default."""
        if self.saved_by_apply:
            return False
        if self.applied_unsaved:
            return True
        if self.version is None and self.auto_save is None:
            self.config_tree()
        if self.auto_save is not None:
            return not self.auto_save
        return needs_save(self.version)  # not set: the release's default

    def startup_lag(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        running = {key: value for key, value in self.config_tree().items() if key in MANAGED_TOP_LEVEL}
        startup = self._documents_set(SHOW_STARTUP)
        managed = {key: value for key, value in startup.items() if key in MANAGED_TOP_LEVEL}
        behind = startup_differences(managed, running, concerns, owned_paths(config.lines))
        if not behind:
            return ""
        return "\n".join(
            [f"save: the startup revision lags the applied config in {len(behind)} object(s) ({SAVE})"]
            + [f"  {line}" for line in behind]
        )

    def save(self) -> None:
        if not self.needs_save():
            return
        output = self.command(SAVE)
        if not SAVED.search(output):
            raise NvueCommandError(f"{self.switch}: `{SAVE}` did not save: {output.strip() or '(no output)'}")

    # -- NVUE commands ----------------------------------------------------------------------------
    def config_tree(self) -> dict[str, Any]:
        """The applied configuration (`nv config show -o json`, its `set` document); notes the
        switch's auto-save setting from it."""
        tree = self._documents_set(SHOW_CONFIG)
        self.auto_save = auto_save_setting(tree)
        return tree

    def _documents_set(self, show: str) -> dict[str, Any]:
        """The `set` document of a `nv config show ... -o json` (noting the version in its header)."""
        output = self.command(show)
        try:
            documents = json.loads(output)
        except ValueError:
            raise NvueCommandError(
                f"{self.switch}: `{show}` did not print JSON: {output.strip()[:300]!r}"
            ) from None
        tree: dict[str, Any] = {}
        for document in documents if isinstance(documents, list) else [documents]:
            if not isinstance(document, dict):
                continue
            header = document.get("header")
            if isinstance(header, dict) and isinstance(header.get("version"), str):
                self.version = header["version"]
            if isinstance(document.get("set"), dict):
                tree = document["set"]
        return tree

    def command(self, line: str) -> str:
        """Type one command, return its output; NvueCommandError when NVUE rejects it.

        `nv set` and `nv unset` print nothing when they succeed, except `created [rev_id: N]` from
        the one that opened a new pending revision; `nv config detach` prints nothing. Any other
        output from them is an error.
        """
        output = self._exchange(line)
        silent = line.startswith(("nv set ", "nv unset ")) or line == DETACH
        said = output.strip()
        if silent and line != DETACH and CREATED.fullmatch(said):
            said = ""
        if _rejected(output) or (silent and said):
            raise NvueCommandError(f"{self.switch}: NVUE refused `{line}`: {output.strip()}")
        return output

    def _exchange(self, line: str) -> str:
        try:
            return self._type(line)
        except NvueCommandError:
            raise
        except Exception as err:
            if not _is_connection_error(err):
                raise
            raise self._lost(line, err) from err

    def _type(self, line: str) -> str:
        conn = self.connection
        prompt = re.compile(re.escape(conn.base_prompt) + r"[$#]\s*$")
        timeout = float(getattr(conn, "read_timeout_override", None) or DEFAULT_READ_TIMEOUT_S)
        conn.write_channel(line + "\n")
        output = ""
        deadline = time.monotonic() + timeout
        while True:
            chunk = conn.read_channel()
            output += chunk
            if prompt.search(output):
                break
            if CONFIRMATION.search(output):
                question = output.strip().splitlines()[-1]
                self._type("N")  # never answer yes for the user: decline, read to the prompt, say so
                raise NvueCommandError(f"{self.switch}: `{line}` asked {question!r}; declined")
            if not chunk:
                if _closed(conn):
                    raise _ConnectionLost("the switch closed the SSH connection")
                if time.monotonic() > deadline:
                    raise NvueCommandError(
                        f"{self.switch}: no prompt within {timeout:g} s after `{line}`: {output[-300:]!r}"
                    )
                time.sleep(POLL_S)
        output = conn.strip_prompt(conn.strip_command(line + "\n", output))
        return output.replace("\r", "")

    def _lost(self, line: str, err: BaseException) -> PushError:
        reason = str(err).strip() or type(err).__name__
        if self.committed:
            state = "the revision had been applied, so the switch runs the new config"
        elif line == APPLY:
            state = "NVUE applies a revision whole or not at all; read the switch back to see which"
        else:
            state = "nothing was applied; the pending revision is detached by the next push"
        return PushError(
            f"{self.switch}: connection lost at `{line}` ({reason}); {state}", rolled_back=not self.committed
        )


def _rejected(output: str) -> bool:
    return any(
        text.startswith(("Error:", "-bash:")) or "command not found" in text
        for text in (row.strip() for row in output.splitlines())
    )


def _closed(conn: Any) -> bool:
    channel = getattr(conn, "remote_conn", None)
    return channel is None or bool(
        getattr(channel, "closed", False) or getattr(channel, "eof_received", False)
    )


def _is_connection_error(err: BaseException) -> bool:
    """Errors that mean the session is gone (netmiko, paramiko and socket flavours of it)."""
    if isinstance(err, (_ConnectionLost, OSError, EOFError)):
        return True
    from netmiko.exceptions import ReadException, ReadTimeout, WriteException
    from paramiko.ssh_exception import SSHException

    return isinstance(err, (ReadException, ReadTimeout, WriteException, SSHException))
