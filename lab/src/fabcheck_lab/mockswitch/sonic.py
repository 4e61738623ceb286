"""Mock community SONiC switch: a bash login whose config commands edit CONFIG_DB."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fabcheck_lab.mockswitch import sonic_show
from fabcheck_lab.mockswitch.device import (
    FAULT_PORT_PRIORITY,
    LOSSLESS_QUEUE,
    CliSession,
    Edit,
    PortQos,
    SwitchDevice,
)
from fabcheck_lab.mockswitch.sonic_commands import SonicCommands
from fabcheck_lab.mockswitch.sonic_db import (
    FACTORY_HWSKU,
    expand_range,
    factory_config_db,
    port_qos,
    priority_list,
)
from fabcheck_lab.mockswitch.sonic_shell import (
    Chain,
    FileSystem,
    Result,
    ShellSyntaxError,
    Stage,
    grep,
    parse,
    pending_heredoc,
)

ROOT_SHELL_ARGS = ([], ["-s"], ["-i"], ["su"], ["bash"], ["-E", "-s"], ["su", "-"])
WRITING_COMMANDS = {"config", "ecnconfig", "tee"}
# No 8-digit build: GCU's validators check no minimum build. 202411: the first branch with `show interfaces
# flap` and the FEC BER columns (fabcheck_lab.mockswitch.sonic_wire), so the lab judges SONiC's flaps.
DEFAULT_RELEASE = "202411.0-mock"


class SonicDevice(SwitchDevice):
    platform = "sonic"

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.checkpoints: dict[str, Any] = {}
        self.files: dict[str, str] = {}
        self.port_flaps: dict[str, int] = {}  # port -> times the config updater took it admin-down
        self.queue_counters_cleared = False  # `sonic-clear queuecounters` ran: show prints differences

    @property
    def release(self) -> str:
        """What `show version` names after 'SONiC.' (GCU's validators and log lines depend on it)."""
        return self.spec.release or DEFAULT_RELEASE

    def factory_config(self) -> dict[str, Any]:
        return factory_config_db(self.spec.name, self.spec.ports, self.spec.model or FACTORY_HWSKU)

    def port_id(self, port: str) -> str:
        """lldpmgrd sets each port's LLDP port ID to its CONFIG_DB alias, the port name when it has none
        (`lldpcli configure ports <name> lldp portidsubtype local <alias>`:
        https://github.com/Azure/sonic-buildimage/blob/202205/dockers/docker-lldp/lldpmgrd#L153)."""
        alias = self.running.get("PORT", {}).get(port, {}).get("alias")
        return str(alias) if alias else port

    def new_session(self, username: str) -> CliSession:
        return SonicSession(self, username)

    def port_qos(self) -> dict[str, PortQos]:
        return port_qos(self.running, self.ports)

    def fault_edits(self, fault: str) -> list[Edit]:
        if fault == "switch-pfc-prio":
            port = self.ports[0]
            current = set(
                priority_list(self.running.get("PORT_QOS_MAP", {}).get(port, {}).get("pfc_enable", ""))
            )
            wrong = (current - {LOSSLESS_QUEUE}) | {FAULT_PORT_PRIORITY}
            return [(("PORT_QOS_MAP", port, "pfc_enable"), ",".join(str(p) for p in sorted(wrong)))]
        edits: list[Edit] = []
        for key, fields in self.running.get("QUEUE", {}).items():
            port, _, queues = key.partition("|")
            if port in self.ports and LOSSLESS_QUEUE in expand_range(queues) and "wred_profile" in fields:
                edits.append((("QUEUE", key, "wred_profile"), None))
        return edits

    def extra_json(self) -> dict[str, Any]:
        return {"checkpoints": self.checkpoints, "files": self.files, "port_flaps": self.port_flaps}

    def load_extra(self, saved: Mapping[str, Any]) -> None:
        self.checkpoints = dict(saved.get("checkpoints", {}))
        self.files = dict(saved.get("files", {}))
        self.port_flaps = dict(saved.get("port_flaps", {}))


class SonicSession(CliSession):
    def __init__(self, device: SonicDevice, username: str) -> None:
        self.device = device
        self.user = username
        self.root = username == "root"
        self.home = "/root" if self.root else f"/home/{username}"
        self.fs = FileSystem(device.files, self.home)
        self.commands = SonicCommands(device, self.fs, self._ask)
        self.awaiting: Callable[[str], str] | None = None
        self.heredoc: tuple[Chain, int, Stage, list[str]] | None = None
        self.pending_question = ""

    # -- terminal ---------------------------------------------------------------------------------
    def greeting(self) -> str:
        return f"Linux {self.device.name} 6.1.0-22-2-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.94-1 x86_64\n"

    def prompt(self) -> str:
        if self.awaiting is not None:
            return ""
        if self.heredoc is not None:
            return "> "
        if self.root:
            where = "~" if self.user == "root" else self.home
            return f"root@{self.device.name}:{where}# "
        return f"{self.user}@{self.device.name}:~$ "

    def cancel(self) -> None:
        self.awaiting = None
        self.heredoc = None

    def is_config_line(self, line: str) -> bool:
        if self.heredoc is not None or self.awaiting is not None:
            return True
        words = line.replace(">", " > ").split()
        if words[:1] == ["sudo"]:
            words = words[1:]
        return ">" in words or (bool(words) and words[0] in WRITING_COMMANDS)

    def _ask(self, question: str, answer: Callable[[str], str]) -> None:
        """Print a question instead of the prompt; the next typed line answers it."""
        self.pending_question = question
        self.awaiting = answer

    def handle(self, line: str) -> str:
        self.last_failed = False
        if self.awaiting is not None:
            answer, self.awaiting = self.awaiting, None
            self.device.record(self.user, "answer", line.strip())
            return _lines(answer(line))
        if self.heredoc is not None:
            return self._heredoc_line(line)
        text = line.strip()
        if not text:
            return ""
        try:
            chain = parse(text)
        except ShellSyntaxError as exc:
            self.last_failed = True
            self.device.record(self.user, "command", text, False)
            return _lines(str(exc))
        output = self._run_chain(chain, 0)
        self.device.record(self.user, "command", text, not self.last_failed)
        return output

    def _heredoc_line(self, line: str) -> str:
        assert self.heredoc is not None
        chain, index, stage, body = self.heredoc
        if line.rstrip("\r") != stage.heredoc:
            body.append(line)
            self.device.record(self.user, "input", line)
            return ""
        stage.stdin_text = "".join(f"{b}\n" for b in body)
        stage.heredoc = None
        self.heredoc = None
        return self._run_chain(chain, index)

    # -- execution --------------------------------------------------------------------------------
    def _run_chain(self, chain: Chain, start: int) -> str:
        waiting = pending_heredoc(chain)
        if waiting is not None and waiting[0] >= start:
            self.heredoc = (chain, waiting[0], waiting[1], [])
            chain = chain[: waiting[0]]
        else:
            waiting = None
        out: list[str] = []
        status = 0
        for operator, pipeline in chain[start:]:
            if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
                continue
            text, status = self._run_pipeline(pipeline)
            out.append(text)
        self.last_failed = status != 0
        return "".join(out)

    def _run_pipeline(self, pipeline: list[Stage]) -> tuple[str, int]:
        shown: list[str] = []
        data: str | None = None
        result = Result()
        for position, stage in enumerate(pipeline):
            stdin = self._stdin(stage, data if position else None)
            if isinstance(stdin, Result):
                return _lines(stdin.err), stdin.status
            result = self._run(stage.argv, stdin)
            data = result.out
            if stage.stdout_file is not None:
                self.fs.write(stage.stdout_file, data, stage.append)
                data = ""
            if position == len(pipeline) - 1:
                shown.append(data)  # the terminal sees the last stage's output before its errors
            if result.err:
                shown.append(_lines(result.err))
        if self.awaiting is not None:
            shown.append(self.pending_question)
        return "".join(shown), result.status

    def _stdin(self, stage: Stage, piped: str | None) -> str | Result | None:
        if stage.stdin_text is not None:
            return stage.stdin_text
        if stage.stdin_file is not None:
            text = self.fs.read(stage.stdin_file)
            if text is None:
                return Result(err=f"-bash: {stage.stdin_file}: No such file or directory", status=1)
            return text
        return piped

    def _run(self, argv: list[str], stdin: str | None, root: bool | None = None) -> Result:
        root = self.root if root is None else root
        name, args = argv[0], argv[1:]
        if name == "sudo":
            if args in ROOT_SHELL_ARGS:
                self.root = True
                return Result()
            return self._run(args, stdin, root=True)
        if name in ("exit", "logout"):
            if self.root and self.user != "root":
                self.root = False
            else:
                self.closed = True
            return Result()
        answered = self.device.tmp_command(argv, self)
        if (
            answered is not None
            and name in ("mkdir", "ls", "rm", "echo", "true")
            and (name != "rm" or args[:1] == ["-r"])
            and (name != "echo" or args in (["$$"], ["$PPID"]))
        ):
            failed = ": cannot " in answered
            text = answered + "\n" if answered else ""
            return Result(err=text.rstrip("\n"), status=1) if failed else Result(text)
        handler = self._builtins().get(name)
        if handler is None:
            return Result(err=f"-bash: {name}: command not found", status=127)
        return handler(argv, root, stdin)

    def _builtins(self) -> dict[str, Callable[[list[str], bool, str | None], Result]]:
        c = self.commands
        return {
            "show": c.show,
            "config": c.config,
            "ecnconfig": c.ecnconfig,
            "sonic-db-cli": c.db_cli,
            "sonic-cfggen": c.cfggen,
            "sonic-clear": c.clear,
            "echo": self._echo,
            "cat": self._cat,
            "tee": self._tee,
            "rm": self._rm,
            "grep": lambda a, r, s: grep(a, s),
            "hostname": lambda a, r, s: Result(self.device.name + "\n"),
            "whoami": lambda a, r, s: Result(("root" if r else self.user) + "\n"),
            "uname": lambda a, r, s: Result(
                f"Linux {self.device.name} 6.1.0-22-2-amd64 #1 SMP "
                "PREEMPT_DYNAMIC Debian 6.1.94-1 x86_64 GNU/Linux\n"
                if a[1:] == ["-a"]
                else "Linux\n"
            ),
            "true": lambda a, r, s: Result(),
            "false": lambda a, r, s: Result(status=1),
        }

    def _echo(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        args = argv[1:]
        newline = "\n"
        if args[:1] == ["-n"]:
            args, newline = args[1:], ""
        return Result(" ".join(args) + newline)

    def _cat(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        if len(argv) == 1:
            return Result(stdin or "")
        out, err = [], []
        for path in argv[1:]:
            text = self._read_special(path)
            if text is None:
                err.append(f"cat: {path}: No such file or directory")
            else:
                out.append(text)
        return Result("".join(out), "\n".join(err), 1 if err else 0)

    def _read_special(self, path: str) -> str | None:
        if self.fs.resolve(path) == "/etc/sonic/config_db.json":
            return sonic_show.config_json(self.device.startup) + "\n"
        return self.fs.read(path)

    def _tee(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        append = "-a" in argv
        for path in [a for a in argv[1:] if not a.startswith("-")]:
            self.fs.write(path, stdin or "", append)
        return Result(stdin or "")

    def _rm(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        force = any(a.startswith("-") and "f" in a for a in argv[1:])
        missing = [p for p in argv[1:] if not p.startswith("-") and not self.fs.remove(p)]
        if missing and not force:
            return Result(err=f"rm: cannot remove '{missing[0]}': No such file or directory", status=1)
        return Result()


def _lines(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
