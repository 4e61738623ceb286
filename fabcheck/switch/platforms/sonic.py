"""Community SONiC: the rendered CONFIG_DB fragment goes in through the Generic Config Updater.

`stage` reads the running CONFIG_DB, turns the difference on the keys fabcheck owns into an RFC 6902
patch, takes `config checkpoint fabcheck-<stamp>`, writes the patch into a file in the login's home
(quoted heredoc, read back and compared) and dry-runs it. `commit` is `config apply-patch FILE`; any
failure there rolls back to the checkpoint. When running already matches but the saved startup
config does not (a save that was cut off), `startup_lag` says so and push saves (`config save -y`).
Lost connections surface as PushError, saying whether a commit on this connection is still unsaved
(then the switch is not on its previous config).

`config apply-patch` is neither quick nor atomic: the updater applies the sorted changes one by one
(about a second each) and, for BUFFER_PG, BUFFER_QUEUE, PORT_QOS_MAP and QUEUE changes, takes each
affected port admin-down and up again. So: the plan (and --check --diff) names those ports; the
commit's time limit is changes x PER_CHANGE_S + APPLY_MARGIN_S, with progress per applied change;
a timeout or a lost session during the apply leaves the outcome UNKNOWN (PushError.unknown) until
the switch is read back, the checkpoint is kept for `config rollback`, and the push lock stays until
it expires. The changes counted are GCU's, not our patch ops (`gcu_change_estimate`: one per leaf
field, as 202205's LowLevelMoveGenerator sorts them, plus an admin-down and -up per affected port),
and once the updater prints its own count (`Applying N changes in order:` up to 202311, `localhost:
applying N changes in order:` from 202405) the limit grows to that count if it is larger.

GCU's field validators judge `JsonPatch.from_diff(running, target)` (gu_common.validate_field_
operation), not the ops we send: PFC_WD changes pass only on a switch whose hwsku is on the allow-list
of gcu_field_operation_validators.conf.json for its release, and never as the creation of the whole
table. A dry run refused that way is reported as such (`explain_refusal`). The release must be
MIN_RELEASE or later (`show version`): the fragment is valid SONiC YANG from 202205 on
(`pfcwd_sw_enable`, BUFFER_PG profile "NULL").

The patch itself (what fabcheck owns, its scoping to concerns, the disruption and change count) is
computed purely in fabcheck.switch.sonic_patch.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from fabcheck.desired.switch import SONIC_LOSSLESS_QUEUE_PROFILE as LOSSLESS_QUEUE_PROFILE
from fabcheck.desired.switch import SONIC_MIN_RELEASE as MIN_RELEASE
from fabcheck.switch.concerns import ALL_CONCERNS
from fabcheck.switch.connect import READ_TIMEOUT_S
from fabcheck.switch.driver import PushError, SwitchDriver
from fabcheck.switch.owned import PORT, Setting, WrittenField
from fabcheck.switch.render import RenderedConfig
from fabcheck.switch.sonic_patch import (
    OWNER_PREFIX,
    ConfigDb,
    Patch,
    SonicError,
    compute_patch,
    describe_patch,
    disruption_note,
    gcu_change_estimate,
    managed_state,
    owned_state,
    parse_fragment,
    port_key_order,
    scope_patch,
)

CHECKPOINT_PREFIX = "fabcheck-"
PATCH_PREFIX = "fabcheck-patch-"  # + the checkpoint's stamp: one file per push, in the login's home
HEREDOC_END = "FABCHECK_PATCH_END"
STARTUP_CONFIG = "/etc/sonic/config_db.json"  # what `config save` writes and a reboot loads
MAX_PATCH_LINE = 512  # longer ops are written one field a line (a tty line holds 4095 bytes)
POLL_S = 0.01
PER_CHANGE_S = 2.0  # the updater's ~1 s per change (reported up to 4 s a change on 150-change patches)
APPLY_MARGIN_S = 120.0  # sorting, validation and the final read-back of the whole CONFIG_DB
RELEASE = re.compile(r"SONiC Software Version: SONiC\.(?P<branch>\S+)")
# The updater's progress, as it prints it (gu_common.TitledLogger: 'Patch Applier: ' + message).
# 202205-202311 list the sorted changes twice, under 'The patch was sorted (converted) into N changes:'
# and again under 'Applying N changes in order:' while applying them; 202405 on list them once, under
# '<scope>: applying N changes in order:' (generic_updater.py at the commits INDEX.tsv cites).
CHANGE_LINE = re.compile(r"^Patch Applier:\s+\* ", re.MULTILINE)
CHANGE_COUNT = re.compile(
    r"^Patch Applier: (?:\S+: )?[Aa]pplying (?P<count>\d+) changes? in order", re.MULTILINE
)
GCU_FIELD_VALIDATOR = "rdma_config_update_validator"
ERROR_LINE = re.compile(r"^(Error: |Failed to |Usage: |-bash: |sudo: )|command not found", re.MULTILINE)


class ConnectionLost(Exception):
    """The SSH channel closed under a command."""


class ApplyTimeout(Exception):
    """A command did not come back to the prompt within its time limit."""


def apply_time_limit(changes: int) -> float:
    """Seconds to wait for `config apply-patch` of `changes` changes (GCU's, gcu_change_estimate)."""
    return changes * PER_CHANGE_S + APPLY_MARGIN_S


def explain_refusal(output: str, running: Mapping[str, Any], release: str) -> str:
    """Pure: what a refused `config apply-patch` means and what to do, where fabcheck can tell ('' where
    not). GCU's PFC_WD validator (field_operation_validators.rdma_config_update_validator) refuses a
    switch whose hwsku maps to no ASIC on the allow-list of gcu_field_operation_validators.conf.json,
    a build older than that ASIC's minimum, and the creation of the whole PFC_WD table (a diff
    that adds /PFC_WD names port entries, not fields)."""
    if GCU_FIELD_VALIDATOR not in output or "PFC_WD" not in output:
        return ""
    hwsku = running.get("DEVICE_METADATA", {}).get("localhost", {}).get("hwsku", "(no DEVICE_METADATA hwsku)")
    if not running.get("PFC_WD"):
        cause = (
            "the switch has no PFC_WD table and GCU refuses to create it whole; create it outside GCU "
            "(`sudo config pfcwd start_default` with DEVICE_METADATA default_pfcwd_status enable, or "
            "`sudo config pfcwd start --action drop <ports> 200`), then push again"
        )
    else:
        cause = (
            f"hwsku {hwsku} on SONiC {release} is not on the allow-list of GCU's "
            "gcu_field_operation_validators.conf.json for PFC_WD (or its build is older than the ASIC's "
            "minimum there); set the watchdog with `config pfcwd` instead and push without the watchdog "
            "concern (the switch play's --skip-tags watchdog), or upgrade to a release whose "
            "allow-list has this hwsku"
        )
    return (
        f"GCU's field validator {GCU_FIELD_VALIDATOR} refused the PFC_WD changes on hwsku {hwsku} "
        f"(SONiC {release}): {cause}"
    )


def release_of(show_version: str) -> tuple[int, int] | None:
    """(year, month) of the branch `show version` names (SONiC.202305.18, SONiC.20230531.18)."""
    found = RELEASE.search(show_version)
    digits = re.match(r"(\d{4})(\d{2})", found["branch"]) if found else None
    return None if digits is None else (int(digits[1]), int(digits[2]))


def patch_lines(patch: Patch) -> list[str]:
    """The patch as short JSON lines (one op a line; long ops one field a line)."""
    lines = ["["]
    for index, op in enumerate(patch):
        comma = "," if index < len(patch) - 1 else ""
        text = json.dumps(op)
        body = [text] if len(text) <= MAX_PATCH_LINE else json.dumps(op, indent=1).splitlines()
        body[-1] += comma
        lines += [" " + line for line in body]
    lines.append("]")
    return lines


# What the gate reads to see a saved CONFIG_DB that lags the running one (a push killed between
# apply-patch and `config save`): the running CONFIG_DB and the file a reboot loads.
STARTUP_LAG_PROBES = ("show runningconfiguration all", f"cat {STARTUP_CONFIG}")


def startup_lag_lines(running_output: str, startup_output: str, rendered: str) -> list[str]:
    """Pure, for the gate: `TABLE|key field: startup -> running` for each field a push of `rendered`
    owns (owned_state) where the saved CONFIG_DB differs from the running one. An unmanaged port,
    the stock maps and an operator's own entries are no push's: their unsaved change is left alone."""
    fragment = parse_fragment(RenderedConfig("", "sonic", rendered))
    dbs = []
    for command, output in zip(STARTUP_LAG_PROBES, (running_output, startup_output), strict=True):
        try:
            data = json.loads(output)
        except json.JSONDecodeError:
            raise SonicError(f"`{command}` did not print CONFIG_DB JSON: {_first_error(output)}") from None
        dbs.append(owned_state(data if isinstance(data, dict) else {}, fragment))
    running, startup = dbs
    lines = []
    for table in sorted(running.keys() | startup.keys()):
        have, saved = running.get(table, {}), startup.get(table, {})
        for key in sorted(have.keys() | saved.keys(), key=port_key_order):
            now, then = have.get(key, {}), saved.get(key, {})
            for field in sorted(now.keys() | then.keys()):
                if now.get(field) != then.get(field):
                    lines.append(f"{table}|{key} {field}: {then.get(field, '')} -> {now.get(field, '')}")
    return lines


# -- what a push writes, as owned-field keys (fabcheck.switch.owned) ---------------------------------

# The ids in a key after its port (`Ethernet0|3`) and the numeric fields of a map table, by table.
KEY_IDS: Mapping[str, str] = {"QUEUE": "<tc>", "BUFFER_PG": "<pg>", "BUFFER_QUEUE": "<queues>"}
FIELD_IDS: Mapping[str, str] = {
    "DSCP_TO_TC_MAP": "<d>",
    "DOT1P_TO_TC_MAP": "<pcp>",
    "TC_TO_QUEUE_MAP": "<tc>",
    "TC_TO_PRIORITY_GROUP_MAP": "<tc>",
    "MAP_PFC_PRIORITY_TO_QUEUE": "<p>",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": "<p>",
}
_CLASS_SUFFIX = re.compile(r"TC\d+$")  # FABCHECK_TC3, FABCHECK_ECN_TC3: one entry per traffic class


def settings(text: str, ports: Iterable[str]) -> set[Setting]:
    """Each field of a CONFIG_DB JSON (a rendered fragment or `show runningconfiguration all`) with
    its key `TABLE|key field`: a managed port as <port>, the ids after it and a map's numeric fields
    as placeholders, a FABCHECK name's traffic class as <tc> (`QUEUE|<port>|<tc> wred_profile`,
    `DSCP_TO_TC_MAP|FABCHECK <d>`, `SCHEDULER|FABCHECK_TC<tc> weight`)."""
    try:
        db = json.loads(text)
    except json.JSONDecodeError:
        raise SonicError(f"not CONFIG_DB JSON: {_first_error(text)}") from None
    return db_settings(db if isinstance(db, dict) else {}, ports)


def db_settings(db: Mapping[str, Any], ports: Iterable[str]) -> set[Setting]:
    managed = set(ports)
    found: set[Setting] = set()
    for table, entries in db.items():
        for key, fields in (entries if isinstance(entries, dict) else {}).items():
            head, *rest = str(key).split("|")
            port = head if head in managed else None
            name = (
                PORT if port else _CLASS_SUFFIX.sub("TC<tc>", head) if head.startswith(OWNER_PREFIX) else head
            )
            shown = "|".join([table, name, *(KEY_IDS.get(table, "<id>") for _ in rest)])
            for field, value in (fields if isinstance(fields, dict) else {}).items():
                word = FIELD_IDS.get(table, "<id>") if str(field).isdigit() else field
                found.add((WrittenField(f"{shown} {word}", port), f"{table}|{key} {field} = {value}"))
    return found


def checkpoint_name() -> str:
    return CHECKPOINT_PREFIX + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def patch_file(checkpoint: str) -> str:
    """The push's own patch file (two pushes never share one)."""
    return PATCH_PREFIX + checkpoint.removeprefix(CHECKPOINT_PREFIX) + ".json"


# -- the driver (I/O) ------------------------------------------------------------------------------


def _lost_errors() -> tuple[type[BaseException], ...]:
    from netmiko.exceptions import NetmikoBaseException
    from paramiko.ssh_exception import SSHException

    return (ConnectionLost, ApplyTimeout, OSError, EOFError, SSHException, NetmikoBaseException)


class SonicDriver(SwitchDriver):
    platform = "sonic"

    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        self.transcript: list[str] = []  # every line sent, for logs and the tests' line counts
        self.commands_sent = 0
        self._checkpoint: str | None = None
        self._patch_file: str | None = None
        self._patch_written = False
        self._patch_size = 0
        self._gcu_changes = 0  # GCU's sorted changes, estimated from the staged patch
        self._release = "(release not read)"
        self._unsaved_commit = False
        prompt = str(getattr(connection, "base_prompt", "") or "")
        self.name = prompt.partition("@")[2].partition(":")[0] or str(getattr(connection, "host", "switch"))
        self._prompt = re.compile(re.escape(prompt) + r"[$#]\s*$") if prompt else re.compile(r"[$#]\s*$")

    # -- the SwitchDriver interface ---------------------------------------------------------------
    def running(self) -> str:
        with self._session("reading the running config"):
            return json.dumps(managed_state(self._config_db()), indent=4, sort_keys=True)

    locks = True

    def lock_shell(self, command: str) -> str:
        return self._run(command).strip()

    def stage(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        fragment = parse_fragment(config)
        with self._session("staging"):
            self._check_release()
            running = self._config_db()
            # Read back: the outcome of any earlier push is known now, so its checkpoint may go.
            self._delete_stale_checkpoints()
            self._check_buffer_model(running, fragment)
            try:
                patch = scope_patch(compute_patch(running, fragment), running, concerns)
            except SonicError as err:
                raise SonicError(f"{self.name}: {err}") from None
            if not patch:
                return ""
            self._check_queue_profiles(running, fragment)
            self._take_checkpoint()
            self._write_patch(patch)
            self._gcu_changes = gcu_change_estimate(patch, running)
            assert self._patch_file is not None
            command = f"sudo config apply-patch --dry-run {shlex.quote(self._patch_file)}"
            output = self._run(command)
            if "Patch applied successfully." not in output or ERROR_LINE.search(output):
                why = explain_refusal(output, running, self._release)
                raise SonicError(
                    f"{self.name}: `{command}` failed: {_first_error(output)}" + (f"; {why}" if why else "")
                )
            note = disruption_note(patch)
            return "\n".join(filter(None, [note, describe_patch(patch, running)]))

    def commit(self) -> None:
        if not self._patch_written or self._checkpoint is None or self._patch_file is None:
            raise SonicError(f"{self.name}: nothing staged to commit")
        with self._session("commit (config apply-patch)", applying=True):
            changes = max(self._gcu_changes, self._patch_size)
            limit = apply_time_limit(changes)
            self.on_progress(
                f"apply-patch: {self._patch_size} patch op(s), up to {changes} GCU change(s), "
                f"up to {limit:g} s"
            )
            output = self._run(f"sudo config apply-patch {shlex.quote(self._patch_file)}", timeout=limit)
            if "Patch applied successfully." in output and not ERROR_LINE.search(output):
                self._unsaved_commit = True
                return
            reason = _first_error(output)
            undo = self._run(f"sudo config rollback {shlex.quote(self._checkpoint)}")
            if "Config rolled back successfully." not in undo:
                self._unsaved_commit = True  # the switch may hold part of the patch
                raise PushError(
                    f"{self.name}: config apply-patch failed ({reason}) and rollback to checkpoint "
                    f"{self._checkpoint} failed too ({_first_error(undo)}): the switch may be half-applied",
                    rolled_back=False,
                )
            raise SonicError(f"{self.name}: config apply-patch failed: {reason}")

    def discard(self) -> None:
        with self._session("discarding the staged patch"):
            if self._patch_written and self._patch_file is not None:
                self._expect_silent(f"rm -f {shlex.quote(self._patch_file)}")
                self._patch_written = False
            if self._checkpoint is not None:
                self._delete_checkpoint(self._checkpoint)
                self._checkpoint = None

    def needs_save(self) -> bool:
        return True  # apply-patch changes the running CONFIG_DB only

    def startup_lag(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        """'' when startup holds the fragment too (for `concerns`); else a diff line.

        A push whose save was cut (connection lost after the apply) leaves running right and startup
        stale; without this the next push would see nothing to do and never save.
        """
        fragment = parse_fragment(config)
        with self._session("comparing the startup config"):
            output = self._run(f"cat {shlex.quote(STARTUP_CONFIG)}")
        try:
            startup = json.loads(output)
        except json.JSONDecodeError:
            raise SonicError(
                f"{self.name}: {STARTUP_CONFIG} is not CONFIG_DB JSON: {_first_error(output)}"
            ) from None
        startup = startup if isinstance(startup, dict) else {}
        try:
            behind = scope_patch(compute_patch(startup, fragment), startup, concerns)
        except SonicError:
            behind = [{"op": "add", "path": "/PORT"}]  # startup lacks a port the running config has
        if not behind:
            return ""
        return f"save: {STARTUP_CONFIG} lags the running config by {len(behind)} change(s) (config save -y)"

    def save(self) -> None:
        with self._session("saving (config save)"):
            self._expect("sudo config save -y", "Running command:")
            self._unsaved_commit = False

    # -- steps ------------------------------------------------------------------------------------
    def _config_db(self) -> dict[str, Any]:
        output = self._run("show runningconfiguration all")
        try:
            data = json.loads(output)
        except json.JSONDecodeError:
            raise SonicError(
                f"{self.name}: `show runningconfiguration all` did not print CONFIG_DB JSON: "
                f"{_first_error(output)}"
            ) from None
        if not isinstance(data, dict):
            raise SonicError(f"{self.name}: `show runningconfiguration all` printed no JSON object")
        return data

    def _check_release(self) -> None:
        output = self._run("show version")
        release = release_of(output)
        found = RELEASE.search(output)
        self._release = found["branch"] if found else "(unknown release)"
        if release is None or release < MIN_RELEASE:
            named = found["branch"] if found else "(no 'SONiC Software Version' line)"
            raise SonicError(
                f"{self.name} runs SONiC {named}: fabcheck needs SONiC "
                f"{MIN_RELEASE[0]}{MIN_RELEASE[1]:02d} or later (its fragment is valid SONiC YANG from "
                '202205 on: pfcwd_sw_enable, BUFFER_PG profile "NULL"); upgrade the switch'
            )

    def _check_buffer_model(self, running: Mapping[str, Any], fragment: ConfigDb) -> None:
        model = running.get("DEVICE_METADATA", {}).get("localhost", {}).get("buffer_model", "traditional")
        if "BUFFER_PG" in fragment and model != "dynamic":
            raise SonicError(
                f"{self.name}: DEVICE_METADATA|localhost buffer_model is {model!r}: fabcheck sizes lossless "
                "priority groups with the dynamic buffer model (profile NULL); switch the model to dynamic"
            )

    def _check_queue_profiles(self, running: Mapping[str, Any], fragment: ConfigDb) -> None:
        """The lossless queue profile a push binds must exist on the switch (YANG's leafref would refuse
        the patch with less to go on)."""
        profiles = running.get("BUFFER_PROFILE", {})
        named = {f.get("profile") for f in fragment.get("BUFFER_QUEUE", {}).values()} - set(profiles)
        if named:
            raise SonicError(
                f"{self.name}: BUFFER_PROFILE has no {', '.join(sorted(str(n) for n in named))} "
                f"(its profiles: {', '.join(sorted(profiles)) or 'none'}): fabcheck binds the "
                f"lossless queues to the stock {LOSSLESS_QUEUE_PROFILE} of the dynamic buffer model; "
                "restore it (`config qos reload`)"
            )

    def _delete_stale_checkpoints(self) -> None:
        """Checkpoints (and patch files) of earlier pushes that lost their connection or timed out,
        kept until now because their outcome was unknown; called after the running CONFIG_DB has
        been read back, so it is known now and this push converges from it."""
        output = self._run("sudo config list-checkpoints")
        try:
            names = json.loads(output)
        except json.JSONDecodeError:
            raise SonicError(f"{self.name}: config list-checkpoints: {_first_error(output)}") from None
        for name in names if isinstance(names, list) else []:
            if isinstance(name, str) and name.startswith(CHECKPOINT_PREFIX):
                self._delete_checkpoint(name)
                self._expect_silent(f"rm -f {shlex.quote(patch_file(name))}")  # its push's patch file
        self._checkpoint = None

    def _take_checkpoint(self) -> None:
        name = checkpoint_name()
        self._expect(f"sudo config checkpoint {shlex.quote(name)}", "Checkpoint created successfully.")
        self._checkpoint = name
        self._patch_file = patch_file(name)

    def _delete_checkpoint(self, name: str) -> None:
        self._expect(f"sudo config delete-checkpoint {shlex.quote(name)}", "Checkpoint deleted successfully.")

    def _write_patch(self, patch: Patch) -> None:
        body = patch_lines(patch)
        assert HEREDOC_END not in body  # JSON lines start with a bracket or a space
        assert self._patch_file is not None
        self._patch_written = True  # from the first line on, a half-written file may exist
        self._patch_size = len(patch)
        target = shlex.quote(self._patch_file)
        self._run("\n".join([f"cat > {target} <<'{HEREDOC_END}'", *body, HEREDOC_END]))
        written = self._run(f"cat {target}")
        try:
            intact = json.loads(written) == patch
        except json.JSONDecodeError:
            intact = False
        if not intact:
            raise SonicError(f"{self.name}: the patch file {self._patch_file} does not read back as written")

    # -- the shell --------------------------------------------------------------------------------
    def _expect(self, command: str, success: str) -> str:
        output = self._run(command)
        if success not in output or ERROR_LINE.search(output):
            raise SonicError(f"{self.name}: `{command}` failed: {_first_error(output)}")
        return output

    def _expect_silent(self, command: str) -> None:
        output = self._run(command)
        if output.strip():
            raise SonicError(f"{self.name}: `{command}` failed: {_first_error(output)}")

    def _run(self, command: str, timeout: float | None = None) -> str:
        """Send one command (several lines for a heredoc); its output up to the next prompt."""
        conn = self.connection
        lines = command.split("\n")
        self.transcript += lines
        self.commands_sent += 1
        conn.write_channel(command + "\n")
        if timeout is None:
            timeout = float(getattr(conn, "read_timeout_override", None) or READ_TIMEOUT_S)
        deadline = time.monotonic() + timeout
        buffer = ""
        applied = 0
        total: int | None = None
        while not self._prompt.search(buffer):
            chunk = conn.read_channel()
            buffer += chunk
            if chunk:
                header = CHANGE_COUNT.search(buffer)
                if header and total is None:
                    # GCU's own count is known now: wait for that many changes if it is more.
                    total = int(header["count"])
                    deadline = max(deadline, time.monotonic() + apply_time_limit(total))
                changes = len(CHANGE_LINE.findall(buffer, header.end())) if header else 0
                if changes > applied:
                    applied = changes
                    self.on_progress(f"apply-patch: {applied}/{total} changes applied")
                if re.search(r"\[sudo\] password for [^:]*:\s*$", buffer):
                    conn.write_channel("\x03")
                    raise SonicError(
                        f"{self.name}: sudo asks for a password; fabcheck needs passwordless sudo"
                    )
                continue
            channel = getattr(conn, "remote_conn", None)
            if channel is None or channel.closed or channel.eof_received:
                raise ConnectionLost(f"channel closed after `{lines[0]}`")
            if time.monotonic() > deadline:
                raise ApplyTimeout(f"no prompt within {timeout:g} s after `{lines[0]}`")
            time.sleep(POLL_S)
        text = buffer.replace("\r", "")
        prompt = self._prompt.search(text)
        assert prompt is not None  # the loop ended on it; "\r" is only the whitespace its "\s*$" allows
        text = text[: prompt.start()]
        # The shell echoes what was typed: one line per line sent, before the output.
        return text.split("\n", len(lines))[-1] if text.count("\n") >= len(lines) else ""

    @contextlib.contextmanager
    def _session(self, step: str, *, applying: bool = False) -> Iterator[None]:
        """Lost connections become PushError saying what the switch runs now."""
        try:
            yield
        except (SonicError, PushError):
            raise
        except _lost_errors() as err:
            what = "timed out" if isinstance(err, ApplyTimeout) else "connection lost"
            if self._unsaved_commit:
                state = "a commit on this connection is not saved: the switch runs the new config"
            elif applying:
                state = (
                    "`config apply-patch` was running: the OUTCOME IS UNKNOWN until the switch is read back "
                    "(the updater applies changes one by one, so it may hold part of the patch); checkpoint "
                    f"{self._checkpoint} is kept: rerun the push to read it back and converge, or "
                    f"`sudo config rollback {self._checkpoint}`"
                )
            else:
                state = "nothing was committed on this connection: the switch runs its previous config"
            raise PushError(
                f"{self.name}: {what} while {step} ({type(err).__name__}: {err}); {state}",
                rolled_back=not (self._unsaved_commit or applying),
                unknown=applying and not self._unsaved_commit,
            ) from err


def _first_error(output: str) -> str:
    """The line that says why: 202205-202311 print a bare 'Failed to apply patch' and the reason on
    click's 'Error: ' line; 202405 on print 'Failed to apply patch due to: <reason>' first."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ERROR_LINE.search(ln)]
    telling = [ln for ln in errors if not re.fullmatch(r"(Failed to [\w -]+|Usage: .*)", ln)]
    return (telling or errors or lines or ["no output"])[0][:300]
