"""Arista EOS driver: the rendered lines go through one `configure session`, committed atomically.

A push stages everything in a session named `fabcheck-<random>`: first the `no ...` lines that take
back what an earlier push (or a hand edit) left in the parts fabcheck owns and this config lacks,
then the rendered lines. `show session-config diffs` is the diff; `commit` applies it in one step,
`abort` drops it. EOS keeps an uncommitted session after its CLI goes away.

Sessions that are not this push's own are never aborted: `stage` reads `show configuration
sessions | json` first; a pending session of someone else (any name not `fabcheck-`) stops the push
naming it (ForeignWork); a `fabcheck-` session with a live terminal in it (`instances`) is another
push at work, so this one refuses (SwitchLocked, the session is EOS's own lock: it lives exactly as
long as the other push's login); a `fabcheck-` session whose terminal is gone is what a dead push of
ours left, and is aborted. After entering its own session the push lists again: if another live
`fabcheck-` session appeared meanwhile, it aborts its own and refuses too (both may refuse; never
both proceed).

Tx-queues are strict priority on EOS until `no priority`: a DWRR queue gets `no priority` and
`bandwidth percent`, except a lossless queue the PFC watchdog watches, whose share is written as
`bandwidth guaranteed percent` (EOS watches only queues with guaranteed bandwidth): one bandwidth line
per queue, as AVD's tx-queue templates write them. Jericho/VOQ families (7280R, 7500R, 7800R) name
unicast queues `tx-queue` and refuse `uc-tx-queue`: the keyword follows the model `show version | json`
reports.

What fabcheck owns: the whole DSCP -> traffic-class map (a DSCP the config does not map goes back
to EOS's default class), the global PFC watchdog lines, every `qos profile` block it renders, and
the QoS lines (trust, PFC, watchdog, tx-queues, mtu, service-profile) of the interfaces it
renders. Anything else (descriptions, shutdown, other interfaces and profiles) is left alone.

Every owned line belongs to concerns (`_LINES`): `qos map dscp` and `qos trust` to dscp, PFC lines to
pfc, watchdog lines to watchdog, bandwidth/priority lines of a tx-queue to scheduler, its
`random-detect ecn` lines to ecn, `mtu` to mtu; a block (tx-queue) to those of its lines. A push
scoped to some concerns types only the lines (and `no` lines) whose concerns are all chosen, inside
their blocks; `service-profile`, which binds every class setting of the profile to the port, goes
only with every one of those concerns. EOS keeps no buffer settings of ours: buffers has no line.
"""

from __future__ import annotations

import difflib
import json
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fabcheck.errors import FabcheckError
from fabcheck.parsers.eos_config import DSCP_MAP_LINE, ConfigNode, dscp_map, format_config, parse_config
from fabcheck.switch.concerns import ALL_CONCERNS
from fabcheck.switch.connect import READ_TIMEOUT_S
from fabcheck.switch.driver import ForeignWork, PushError, SwitchDriver, SwitchLocked
from fabcheck.switch.owned import PORT, Setting, WrittenField, normalise
from fabcheck.switch.render import RenderedConfig

SESSION_PREFIX = "fabcheck-"
SAVE_COMMAND = "copy running-config startup-config"
SHOW_STARTUP = "show startup-config"
POLL_S = 0.005

_WATCHDOG = "priority-flow-control pause watchdog"
# What the attached profile carries: the port's trust, PFC, watchdog and tx-queues.
_PROFILE_CONCERNS = frozenset({"dscp", "pfc", "watchdog", "scheduler", "ecn"})


@dataclass(frozen=True)
class OwnedLine:
    """A config line fabcheck owns: its pattern, the `no` line that removes it, its concerns.

    Two lines with the same negation set the same thing (the later one wins), so the negation
    doubles as the setting's key."""

    pattern: re.Pattern[str]
    negation: str
    concerns: frozenset[str]


_LINES: tuple[OwnedLine, ...] = tuple(
    OwnedLine(re.compile(pattern), negated, frozenset(concerns))
    for pattern, negated, concerns in (
        (
            rf"{_WATCHDOG} default (timeout|recovery-time|polling-interval) \S+",
            rf"no {_WATCHDOG} default \1",
            {"watchdog"},
        ),
        (rf"{_WATCHDOG} action \S+", f"no {_WATCHDOG} action", {"watchdog"}),
        (r"qos trust \S+", "no qos trust", {"dscp"}),
        (r"priority-flow-control on", "no priority-flow-control", {"pfc"}),
        (r"priority-flow-control priority (\d+) \S+", r"no priority-flow-control priority \1", {"pfc"}),
        (_WATCHDOG, f"no {_WATCHDOG}", {"watchdog"}),
        (r"(uc-tx-queue|tx-queue) (\d+)", r"no \1 \2", set()),  # a block: the concerns of its lines
        (r"mtu \d+", "no mtu", {"mtu"}),
        (r"service-profile \S+", "no service-profile", _PROFILE_CONCERNS),
        (r"bandwidth percent \d+", "no bandwidth percent", {"scheduler"}),
        # a watched lossless queue's DWRR share, written as the guarantee EOS's watchdog needs: it exists
        # only while the watchdog runs, and switch.watchdog judges it (each line has one concern)
        (r"bandwidth guaranteed percent \d+", "no bandwidth guaranteed", {"watchdog"}),
        (r"priority strict", "no priority", {"scheduler"}),
        (r"no priority", "priority strict", {"scheduler"}),
        (r"random-detect ecn minimum-threshold .+", "no random-detect ecn", {"ecn"}),
        (r"random-detect ecn count", "no random-detect ecn count", {"ecn"}),
    )
)
_GLOBAL_OWNED = re.compile(r"qos map dscp |priority-flow-control pause watchdog ")
# The qos profiles the push renders (templates/eos/switch.j2 names one; tests/switch/test_eos_plan.py
# fails if a render names another): only these are fabcheck's. An operator's own profile, saved or not,
# is neither planned against nor counted by the gate's startup view (no push would ever save it).
OWNED_PROFILES = ("FABCHECK-ROCE",)
_BLOCKS_OWNED_WHOLE = re.compile("|".join(f"qos profile {re.escape(name)}" for name in OWNED_PROFILES))
_BLOCKS_OWNED_QOS = re.compile(r"interface \S+")


# Jericho / VOQ families (7280R, 7500R, 7800R and their R2/R3/R4 generations) take `tx-queue`.
VOQ_MODEL = re.compile(r"^(DCS-)?7(280|500|800)[A-Z]*R")
_UC_TX_QUEUE = re.compile(r"^(\s*)uc-tx-queue ", re.MULTILINE)


def queue_keyword(model: str) -> str:
    """`tx-queue` on Jericho/VOQ models, `uc-tx-queue` on the others (Trident, Tomahawk, cEOS)."""
    return "tx-queue" if VOQ_MODEL.match(model.strip()) else "uc-tx-queue"


def for_model(rendered: str, model: str) -> str:
    """Pure: the rendered config with the unicast tx-queue keyword `model` takes."""
    if queue_keyword(model) == "uc-tx-queue":
        return rendered
    return _UC_TX_QUEUE.sub(r"\1tx-queue ", rendered)


class EosConnectionLost(PushError):
    """The SSH channel closed under a command; the switch keeps its running config unless it committed."""


class EosCommandRejected(PushError):
    """EOS answered a line with `% ...` (invalid, incomplete, ambiguous, refused)."""


# -- planning a session against the config tree (pure) ---------------------------------------------


def _owned(line: str) -> OwnedLine | None:
    return next((owned for owned in _LINES if owned.pattern.fullmatch(line)), None)


def negation(line: str) -> str | None:
    """The `no` line that removes `line`, or None for a line fabcheck does not manage."""
    owned = _owned(line)
    return None if owned is None else owned.pattern.sub(owned.negation, line)


def concerns_of(node: ConfigNode) -> frozenset[str]:
    """The concerns a line (or a block, through its lines) belongs to.

    A running line fabcheck cannot place (an operator's, inside a block of ours) belongs to every
    concern, so only a whole push touches it; rendered lines are all placed (`_check_placed`)."""
    if node.children:
        return frozenset().union(*(concerns_of(child) for child in node.children))
    if DSCP_MAP_LINE.fullmatch(node.line):
        return frozenset({"dscp"})
    owned = _owned(node.line)
    if owned is None:
        return ALL_CONCERNS
    return owned.concerns or frozenset({"scheduler"})  # an empty tx-queue block


def _check_placed(nodes: Iterable[ConfigNode]) -> None:
    """Every rendered line has its concerns, or a scoped push would silently leave it out."""
    for node in nodes:
        if node.children:
            _check_placed(node.children)
        elif not DSCP_MAP_LINE.fullmatch(node.line) and _owned(node.line) is None:
            raise FabcheckError(
                f"rendered EOS line {node.line!r} belongs to no concern (_LINES in {__name__})"
            )


def _scoped(nodes: Iterable[ConfigNode], concerns: frozenset[str]) -> tuple[ConfigNode, ...]:
    """The lines of `concerns` alone, in their blocks; blocks left empty are dropped."""
    kept: list[ConfigNode] = []
    for node in nodes:
        if node.children:
            inner = _scoped(node.children, concerns)
            if inner:
                kept.append(ConfigNode(node.line, inner))
        elif concerns_of(node) <= concerns:
            kept.append(node)
    return tuple(kept)


def startup_differences(rendered: str, running: str, startup: str, concerns: frozenset[str]) -> list[str]:
    """Pure: where the startup config differs from running in what a push of `rendered` owns, for
    `concerns` (its global lines and the blocks it renders), as unified-diff lines."""
    blocks = {node.line for node in parse_config(rendered) if node.children}

    def owned_view(text: str) -> list[str]:
        nodes = [
            node for node in managed_view(parse_config(text)) if not node.children or node.line in blocks
        ]
        return format_config(_scoped(nodes, concerns)).splitlines()

    return list(
        difflib.unified_diff(
            owned_view(startup), owned_view(running), "startup-config", "running-config", lineterm="", n=0
        )
    )


# What the gate reads to see a startup-config that lags running-config (a push killed between
# commit and `copy running-config startup-config`).
STARTUP_LAG_PROBES = ("show running-config", SHOW_STARTUP)


def startup_lag_lines(running: str, startup: str, rendered: str) -> list[str]:
    """Pure, for the gate: unified-diff lines of what a push of `rendered` owns (its global lines and
    the owned lines of the blocks it renders: the qos profiles it renders and the interfaces it
    manages, as the push's own save decision reads them, startup_differences) where startup-config
    differs from running-config. An unmanaged interface or an operator's profile is no push's: an
    unsaved change there is left to whoever made it."""
    return startup_differences(rendered, running, startup, ALL_CONCERNS)


def managed_text(running: str) -> str:
    """The parts of a running config fabcheck manages, as config text."""
    return format_config(managed_view(parse_config(running)))


def managed_view(nodes: Iterable[ConfigNode]) -> tuple[ConfigNode, ...]:
    """The parts of a running config fabcheck manages (see the module docstring), in EOS's order."""
    kept: list[ConfigNode] = []
    for node in nodes:
        owned_global = not node.children and _GLOBAL_OWNED.match(node.line)
        if owned_global or _BLOCKS_OWNED_WHOLE.fullmatch(node.line):
            kept.append(node)
        elif _BLOCKS_OWNED_QOS.fullmatch(node.line):
            owned = tuple(child for child in node.children if negation(child.line) is not None)
            if owned:
                kept.append(ConfigNode(node.line, owned))
    return tuple(kept)


def session_lines(rendered: str, running: str, concerns: frozenset[str] = ALL_CONCERNS) -> list[str]:
    """Pure: what to type in the session so the switch ends up holding `rendered`, for `concerns`.

    `running` is the switch's running config (whole or its managed view). Stale lines fabcheck owns
    are negated inside the block they live in, before that block's rendered lines. Lines of other
    concerns (or binding chosen and other ones) are neither typed nor negated.
    """
    want, have = parse_config(rendered), managed_view(parse_config(running))
    _check_placed(want)
    lines = _stale_dscp_lines(dscp_map(want), dscp_map(have)) if "dscp" in concerns else []
    wanted_globals = {negation(node.line) for node in want if not node.children}
    for node in have:
        key = negation(node.line)
        stale = not node.children and key not in wanted_globals
        if key is not None and stale and concerns_of(node) <= concerns:
            lines.append(key)
    have_blocks = {node.line: node for node in have if node.children}
    for node in want:
        lines += _block_lines(node, have_blocks.get(node.line), concerns)
    return lines


def _stale_dscp_lines(want: dict[int, int], have: dict[int, int]) -> list[str]:
    stale: dict[int, list[int]] = {}
    for dscp, traffic_class in sorted(have.items()):
        if dscp not in want:
            stale.setdefault(traffic_class, []).append(dscp)
    return [
        f"no qos map dscp {' '.join(map(str, dscps))} to traffic-class {tc}"
        for tc, dscps in sorted(stale.items())
    ]


def _block_lines(node: ConfigNode, old: ConfigNode | None, concerns: frozenset[str]) -> list[str]:
    """The lines that take `old` (the running block, or None) to `node`, limited to `concerns`.

    A block is entered only when something inside it is typed. A stale block that also holds
    settings of other concerns is not negated whole: only its lines of `concerns` are."""
    if not node.children:
        return [node.line] if concerns_of(node) <= concerns else []
    body: list[str] = []
    if old is not None:
        wanted = {negation(child.line) for child in node.children}
        for child in old.children:
            key = negation(child.line)
            if key is None or key in wanted:
                continue
            if concerns_of(child) <= concerns:
                body.append(key)
            elif child.children and (inner := _stale_lines(child, concerns)):
                body += [child.line, *inner]
    old_children = {child.line: child for child in old.children} if old is not None else {}
    for child in node.children:
        body += _block_lines(child, old_children.get(child.line), concerns)
    return [node.line, *body] if body else []


def _stale_lines(block: ConfigNode, concerns: frozenset[str]) -> list[str]:
    """The `no` lines of a stale block's lines that belong to `concerns` alone."""
    return [
        key
        for child in block.children
        if (key := negation(child.line)) is not None and concerns_of(child) <= concerns
    ]


# -- what a push writes, as owned-field keys (fabcheck.switch.owned) ---------------------------------

# The ids of EOS lines, by the word before them, and the placeholder each becomes in a key.
KEYED = {"interface": PORT, "priority": "<p>", "uc-tx-queue": "<tc>", "tx-queue": "<tc>"}
DSCP_MAP_KEY = "qos map dscp <d> to traffic-class <tc>"


def setting_words(line: str) -> list[str]:
    """The words that name what `line` sets, without its value: the `no` line that removes it
    (`_LINES`) less its `no` (`bandwidth percent 50` -> `bandwidth percent`; `priority strict` and
    `no priority` both set `priority`); a line fabcheck does not own names itself."""
    if DSCP_MAP_LINE.fullmatch(line):
        return DSCP_MAP_KEY.split()
    removal = negation(line)
    if removal is None:
        return line.split()
    if removal.startswith("no "):
        return removal.removeprefix("no ").split()
    return line.removeprefix("no ").split()


def settings(text: str, ports: Iterable[str]) -> set[Setting]:
    """Each setting line of EOS config text (rendered, running or startup) with its key: the blocks
    it sits in and its setting words, ids as placeholders (`interface <port>: mtu`, `qos profile
    FABCHECK-ROCE: uc-tx-queue <tc> bandwidth percent`, `qos map dscp <d> to traffic-class <tc>`)."""
    managed = set(ports)
    found: set[Setting] = set()

    def walk(nodes: Iterable[ConfigNode], blocks: list[str], port: str | None, shown: str) -> None:
        for node in nodes:
            if node.children:
                if not blocks:
                    (block,) = normalise(node.line.split(), KEYED, managed)
                    walk(node.children, [block.field], block.port, node.line)
                else:
                    (inner,) = normalise(setting_words(node.line), KEYED, managed)
                    walk(node.children, [*blocks, inner.field], port, f"{shown} / {node.line}")
                continue
            for field in normalise(setting_words(node.line), KEYED, managed):
                key = " ".join([*blocks[1:], field.field])
                named = f"{blocks[0]}: {key}" if blocks else key
                found.add((WrittenField(named, port), f"{shown}: {node.line}" if shown else node.line))

    walk(parse_config(text), [], None, "")
    return found


# -- the driver (I/O) -------------------------------------------------------------------------------


class EosDriver(SwitchDriver):
    platform = "eos"

    def __init__(self, connection: Any, *, switch: str = "") -> None:
        super().__init__(connection)
        self.switch = switch or str(getattr(connection, "host", "") or "switch")
        self.session: str | None = None  # our pending session, while staged
        self.committed = False  # a commit went out since the last save (for PushError.rolled_back)
        self.sent: list[str] = []  # every line typed, in order (for logs and figures)
        self._privileged = False
        self.model: str | None = None  # `show version | json` modelName, read once per connection

    def model_name(self) -> str:
        if self.model is None:
            text = self._command("show version | json")
            try:
                self.model = str(json.loads(text)["modelName"])
            except (ValueError, KeyError, TypeError):
                raise EosCommandRejected(
                    f"{self.switch}: `show version | json` did not name the model: {text[:200]!r}",
                    rolled_back=True,
                ) from None
        return self.model

    # -- SwitchDriver -----------------------------------------------------------------------------
    def running(self) -> str:
        return managed_text(self._command("show running-config"))

    def stage(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        self.switch = config.switch
        self._check_other_sessions(None)
        plan = session_lines(for_model(config.text, self.model_name()), self.running(), concerns)
        name = f"{SESSION_PREFIX}{secrets.token_hex(4)}"
        self._command(f"configure session {name}")
        self.session = name
        self._check_other_sessions(name)  # one that appeared while we entered ours
        for line in plan:
            self._command(line)
        return self._command("show session-config diffs")

    def commit(self) -> None:
        if self.session is None:
            raise EosCommandRejected(f"{self.switch}: nothing staged to commit", rolled_back=True)
        self.committed = True
        self._command("commit")
        self.session = None

    def discard(self) -> None:
        if self.session is None:
            return
        self._command("abort")
        self.session = None

    def needs_save(self) -> bool:
        return True  # a commit changes running-config only

    def startup_lag(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        running = self._command("show running-config")
        behind = startup_differences(config.text, running, self._command(SHOW_STARTUP), concerns)
        if not behind:
            return ""
        return "\n".join([f"save: startup-config lags running-config ({SAVE_COMMAND})", *behind])

    def save(self) -> None:
        output = self._command(SAVE_COMMAND)
        if "Copy completed successfully" not in output:
            raise EosCommandRejected(
                f"{self.switch}: {SAVE_COMMAND} did not confirm: {output.strip() or '(no output)'}",
                rolled_back=False,
            )
        self.committed = False

    # -- helpers ----------------------------------------------------------------------------------
    def pending_sessions(self) -> dict[str, dict[str, Any]]:
        """The switch's uncommitted sessions, name -> EOS's record (EOS lists completed ones too)."""
        text = self._command("show configuration sessions | json")
        try:
            sessions = json.loads(text)["sessions"]
        except (ValueError, KeyError, TypeError):
            raise EosCommandRejected(
                f"{self.switch}: unexpected `show configuration sessions | json` output: {text[:200]!r}",
                rolled_back=not self.committed,
            ) from None
        return {
            name: dict(info or {})
            for name, info in sorted(sessions.items())
            if (info or {}).get("state") != "completed"
        }

    def _check_other_sessions(self, ours: str | None) -> None:
        """Refuse over someone's pending session or another live push; abort a dead push's session."""
        pending = {name: info for name, info in self.pending_sessions().items() if name != ours}
        foreign = [name for name in pending if not name.startswith(SESSION_PREFIX)]
        live = [
            name for name in pending if name.startswith(SESSION_PREFIX) and pending[name].get("instances")
        ]
        if (foreign or live) and ours is not None:
            self._command("abort")  # ours only, typed inside it
            self.session = None
        if foreign:
            names = ", ".join(foreign)
            raise ForeignWork(
                f"{self.switch}: pending configuration session(s) {names} that this push did not open "
                "hold staged work; fabcheck never aborts someone's session: commit it (`configure session "
                f"{foreign[0]} commit`) or drop it (`configure session {foreign[0]} abort`), then rerun "
                "the push",
                rolled_back=True,
            )
        if live:
            raise SwitchLocked(
                f"{self.switch}: another push holds the switch (its configuration session {live[0]} is open "
                "on a live terminal); nothing was changed. Rerun when it has finished",
                rolled_back=True,
            )
        if ours is None:
            for name in pending:  # a fabcheck session whose login died: a dead push's, ours to drop
                self._command(f"configure session {name}")
                self._command("abort")
            self.session = None

    def _command(self, line: str) -> str:
        """Type one line, wait for the prompt, return its output; `% ...` answers raise."""
        self._ensure_privileged()
        output = self._send(line)
        error = next((text for text in output.splitlines() if text.startswith("% ")), None)
        if error is not None:
            where = f" in session {self.session}" if self.session else ""
            raise EosCommandRejected(
                f"{self.switch}: EOS refused {line!r}{where}: {error}", rolled_back=not self.committed
            )
        return output

    def _ensure_privileged(self) -> None:
        if self._privileged:
            return
        try:
            self.connection.enable()
        except Exception as err:
            raise self._lost("enable", err) from err
        self._privileged = True

    def _send(self, line: str) -> str:
        """netmiko waits out its whole read timeout on a channel the switch closed; this notices at once."""
        connection = self.connection
        timeout = getattr(connection, "read_timeout_override", None) or READ_TIMEOUT_S
        try:
            connection.write_channel(connection.normalize_cmd(line))
        except Exception as err:
            raise self._lost(line, err) from err
        self.sent.append(line)
        prompt = re.compile(r"(?:^|\n)" + re.escape(connection.base_prompt) + r"[^\n]*[#>][ \t]*$")
        deadline = time.monotonic() + timeout
        buffer, echoed_at = "", -1
        while True:
            try:
                chunk = connection.read_channel()
            except Exception as err:
                raise self._lost(line, err) from err
            if chunk:
                buffer += chunk.replace("\r\n", "\n").replace("\r", "")
                if echoed_at < 0:
                    found = buffer.find(line.strip() + "\n")
                    echoed_at = -1 if found < 0 else found + len(line.strip()) + 1
                if echoed_at >= 0:
                    reply = prompt.search(buffer, echoed_at - 1)
                    if reply:
                        return buffer[echoed_at : reply.start()].strip("\n")
                continue
            if _channel_closed(connection):
                raise self._lost(line, None)
            if time.monotonic() > deadline:
                raise self._lost(line, TimeoutError(f"no prompt within {timeout:g} s"))
            time.sleep(POLL_S)

    def _lost(self, line: str, err: BaseException | None) -> EosConnectionLost:
        state = (
            "a commit was sent, so the switch may hold the new config"
            if self.committed
            else "nothing was committed, the running config is unchanged"
        )
        why = f": {err}" if err is not None and str(err) else ""
        return EosConnectionLost(
            f"{self.switch}: connection lost at {line!r}{why} ({state})", rolled_back=not self.committed
        )


def _channel_closed(connection: Any) -> bool:
    channel = getattr(connection, "remote_conn", None)
    if channel is None:
        return True
    return bool(getattr(channel, "closed", False)) or bool(getattr(channel, "eof_received", False))
