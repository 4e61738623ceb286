"""The slice of the NVUE object model the mock accepts: which `nv set` paths exist, which values fit."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Path_ = tuple[str, ...]


class NvueError(Exception):
    """A rejected NVUE command; str() is the full text NVUE prints."""


@dataclass(frozen=True)
class Leaf:
    """A value attribute: int range or enum."""

    lo: int | None = None
    hi: int | None = None
    choices: tuple[str, ...] = ()
    name: bool = False  # a reference to a profile by name

    def parse(self, attr: str, token: str) -> Any:
        if self.name:
            return profile_ids(token)[0]
        if self.choices:
            if token not in self.choices:
                raise NvueError(
                    f"Error: Invalid value '{token}' for '{attr}': expected one of {', '.join(self.choices)}"
                )
            return token
        if not re.fullmatch(r"\d+", token):
            raise NvueError(f"Error: Invalid value '{token}' for '{attr}': '{token}' is not an integer")
        value = int(token)
        if self.lo is not None and value < self.lo:
            raise NvueError(
                f"Error: Invalid value '{token}' for '{attr}': {value} is less than the minimum of {self.lo}"
            )
        if self.hi is not None and value > self.hi:
            raise NvueError(
                f"Error: Invalid value '{token}' for '{attr}': {value} is greater than the "
                f"maximum of {self.hi}"
            )
        return value


@dataclass(frozen=True)
class Branch:
    """A container of named attributes; `bare` allows `nv set <path>` to stop here."""

    children: Mapping[str, Node]
    bare: bool = False


@dataclass(frozen=True)
class Keyed:
    """A collection keyed by ids (profiles, traffic classes, interfaces); a token may name several."""

    expand: Callable[[str], list[str]]  # raises NvueError on a bad id
    child: Node = field(default_factory=lambda: Branch({}, bare=True))


Node = Leaf | Branch | Keyed
ENABLE = Leaf(choices=("enable", "disable"))
ON_OFF = Leaf(choices=("on", "off"))
PROFILE_REF = Leaf(name=True)
ROCE_MODES = ("lossless", "lossy", "lossless-single-ipool", "lossy-multi-tc")


def number_ids(lo: int, hi: int, what: str) -> Callable[[str], list[str]]:
    """Expand '3', '4,5,7', '0-2,6' into ids, each within lo..hi."""

    def expand(token: str) -> list[str]:
        out: list[str] = []
        for part in token.split(","):
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise NvueError(f"Error: Invalid value '{token}' for '{what}': not a {what} list")
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            if first > last or first < lo or last > hi:
                raise NvueError(f"Error: Invalid value '{token}' for '{what}': must be within {lo}-{hi}")
            out.extend(str(v) for v in range(first, last + 1))
        return sorted(set(out), key=int)

    return expand


def profile_ids(token: str) -> list[str]:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", token):
        raise NvueError(f"Error: Invalid value '{token}' for 'profile-id': not a valid profile name")
    return [token]


def interface_ids(ports: Sequence[str]) -> Callable[[str], list[str]]:
    """Expand 'swp1', 'swp1-4,swp6' and 'swp1-swp4' against the switch's real ports."""

    def expand(token: str) -> list[str]:
        out: list[str] = []
        for part in token.split(","):
            m = re.fullmatch(r"(?:swp)?(\d+)(?:-(?:swp)?(\d+))?", part)
            if not m:
                raise NvueError(f"Error: Invalid value '{token}' for 'interface-id': not an interface name")
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            for number in range(first, last + 1):
                name = f"swp{number}"
                if name not in ports:
                    raise NvueError(
                        f"Error: Invalid value '{token}' for 'interface-id': {name} does not exist"
                    )
                out.append(name)
        return list(dict.fromkeys(out))

    return expand


# Traffic pools NVUE knows (NVUE command reference, `nv set qos traffic-pool <id> memory-percent`).
TRAFFIC_POOLS = ("default-lossy", "default-lossless", "mc-lossy", "roce-lossy", "roce-lossless")
# `nv set interface <id> link speed` (NVUE command reference): auto or a rate the port takes.
LINK_SPEEDS = ("auto", "10G", "25G", "40G", "50G", "100G", "200G", "400G", "800G")
WATCHDOG_SINCE = (5, 6)  # `nv set qos pfc-watchdog` and per-interface `qos pfc-watchdog` from CL 5.6


# `nv set qos roce enable on|off` became `state enabled|disabled` in CL 5.15 (NVIDIA's NVUE OpenAPI)
ROCE_STATE_SINCE = (5, 15)


def roce_switch(release: tuple[int, int]) -> dict[str, Node]:
    """The key that turns the RoCE preset on or off, in the release's words."""
    if release >= ROCE_STATE_SINCE:
        return {"state": Leaf(choices=("enabled", "disabled"))}
    return {"enable": ON_OFF}


def traffic_pool_ids(token: str) -> list[str]:
    if token not in TRAFFIC_POOLS:
        raise NvueError(
            f"Error: Invalid value '{token}' for 'traffic-pool-id': not one of {', '.join(TRAFFIC_POOLS)}"
        )
    return [token]


def qos_schema(release: tuple[int, int] = (5, 11)) -> Branch:
    tc = number_ids(0, 7, "traffic-class")
    watchdog = (
        {"pfc-watchdog": Branch({"polling-interval": Leaf(100, 5000), "robustness": Leaf(1, 1000)})}
        if release >= WATCHDOG_SINCE
        else {}
    )
    return Branch(
        {
            "traffic-pool": Keyed(
                traffic_pool_ids,
                Branch(
                    {
                        "memory-percent": Leaf(1, 100),
                        "switch-priority": Keyed(number_ids(0, 7, "switch-priority")),
                    },
                    bare=True,
                ),
            ),
            "roce": Branch({**roce_switch(release), "mode": Leaf(choices=ROCE_MODES)}, bare=True),
            "pfc": Keyed(
                profile_ids,
                Branch(
                    {
                        "switch-priority": Keyed(number_ids(0, 7, "switch-priority")),
                        "tx": ENABLE,
                        "rx": ENABLE,
                        "cable-length": Leaf(1, 100000),
                        # NVIDIA's NVUE OpenAPI (5.3-5.18): at least 1 byte; no maximum there
                        "port-buffer": Leaf(1, 4294967295),
                        "xoff-threshold": Leaf(1, 4294967295),
                        "xon-threshold": Leaf(1, 4294967295),
                    },
                    bare=True,
                ),
            ),
            "congestion-control": Keyed(
                profile_ids,
                Branch(
                    {
                        "traffic-class": Keyed(
                            tc,
                            Branch(
                                {
                                    "min-threshold": Leaf(1, 4294967295),
                                    "max-threshold": Leaf(1, 4294967295),
                                    "probability": Leaf(0, 100),
                                    "ecn": ENABLE,
                                    "red": ENABLE,
                                },
                                bare=True,
                            ),
                        ),
                    },
                    bare=True,
                ),
            ),
            "egress-scheduler": Keyed(
                profile_ids,
                Branch(
                    {
                        "traffic-class": Keyed(
                            tc,
                            Branch(
                                {
                                    "mode": Leaf(choices=("dwrr", "strict")),
                                    "bw-percent": Leaf(1, 100),
                                },
                                bare=True,
                            ),
                        ),
                    },
                    bare=True,
                ),
            ),
            "mapping": Keyed(
                profile_ids,
                Branch(
                    {
                        "trust": Leaf(choices=("l2", "l3", "both", "port")),
                        "port-default-sp": Leaf(0, 7),
                        "dscp": Keyed(number_ids(0, 63, "dscp"), Branch({"switch-priority": Leaf(0, 7)})),
                        "pcp": Keyed(number_ids(0, 7, "pcp"), Branch({"switch-priority": Leaf(0, 7)})),
                    },
                    bare=True,
                ),
            ),
            "egress-queue-mapping": Keyed(
                profile_ids,
                Branch(
                    {
                        "switch-priority": Keyed(
                            number_ids(0, 7, "switch-priority"), Branch({"traffic-class": Leaf(0, 7)})
                        ),
                    },
                    bare=True,
                ),
            ),
            **watchdog,
        }
    )


def interface_schema(release: tuple[int, int] = (5, 11)) -> Branch:
    watchdog = {"pfc-watchdog": Branch({"state": ENABLE}, bare=True)} if release >= WATCHDOG_SINCE else {}
    return Branch(
        {
            "link": Branch(
                {
                    "mtu": Leaf(552, 9216),
                    "state": Leaf(choices=("up", "down")),
                    "speed": Leaf(choices=LINK_SPEEDS),
                }
            ),
            "qos": Branch(
                {
                    "pfc": Branch({"profile": PROFILE_REF}),
                    **watchdog,
                    "congestion-control": Branch({"profile": PROFILE_REF}),
                    "egress-scheduler": Branch({"profile": PROFILE_REF}),
                    "mapping": Branch({"profile": PROFILE_REF}),
                }
            ),
        }
    )


# `nv set system config auto-save`: from CL 5.4 `enable on|off`, from 5.10 `state enabled|disabled`
# (NVUE command reference; NVIDIA's NVUE OpenAPI per release, as the nvueschema models carry it).
AUTO_SAVE_SETTING_SINCE = (5, 4)
AUTO_SAVE_STATE_SINCE = (5, 10)


def system_schema(release: tuple[int, int] = (5, 11)) -> Branch:
    if release < AUTO_SAVE_SETTING_SINCE:
        return Branch({})
    if release < AUTO_SAVE_STATE_SINCE:
        auto_save = Branch({"enable": ON_OFF}, bare=True)
    else:
        auto_save = Branch({"state": Leaf(choices=("enabled", "disabled"))}, bare=True)
    return Branch({"config": Branch({"auto-save": auto_save})})


def root_schema(ports: Sequence[str], release: tuple[int, int] = (5, 11)) -> Branch:
    return Branch(
        {
            "qos": qos_schema(release),
            "interface": Keyed(interface_ids(ports), interface_schema(release)),
            "system": system_schema(release),
        }
    )


def walk(schema: Branch, tokens: Sequence[str], command: str, *, unset: bool) -> list[tuple[Path_, Any]]:
    """Resolve `nv set|unset` tokens into (path, value) pairs; value {} means 'container exists'.

    For unset, the value is ignored and a trailing value token is optional.
    """
    targets: list[tuple[Path_, Node]] = [((), schema)]
    for index, token in enumerate(tokens):
        node = targets[0][1]
        remaining = len(tokens) - index - 1
        if isinstance(node, Leaf):
            if remaining:
                raise NvueError(f"Error: Invalid Command: {command}")
            value = node.parse(targets[0][0][-1], token)
            return [(path, value) for path, _ in targets]
        if isinstance(node, Keyed):
            keys = node.expand(token)
            targets = [((*path, key), node.child) for path, _ in targets for key in keys]
            continue
        child = node.children.get(token)
        if child is None:
            raise NvueError(f"Error: Invalid Command: {command}")
        targets = [((*path, token), child) for path, _ in targets]
    node = targets[0][1]
    if unset:
        return [(path, None) for path, _ in targets]
    if isinstance(node, Leaf):
        raise NvueError(f"Error: Incomplete Command: {command}")
    if isinstance(node, Branch) and not node.bare:
        raise NvueError(f"Error: Incomplete Command: {command}")
    if isinstance(node, Keyed):
        raise NvueError(f"Error: Incomplete Command: {command}")
    return [(path, {}) for path, _ in targets]
