"""Parser for ``rdma link`` (iproute2): the state of every RDMA port.

Text lines look like ``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0`` (iproute2
before 4.19 printed ``1/1: mlx5_0/1: state ...``); InfiniBand ports add ``subnet_prefix``, ``lid``,
``sm_lid`` and ``lmc``; ``-d`` adds ``netdev_index`` and a ``caps: <...>`` line. ``rdma -j link`` prints
a JSON list of objects with the same keys (``ifname``/``port``, older builds ``ifname: "mlx5_0/1"``).
A line that starts like an ``rdma link`` line but does not continue as ``key value`` pairs, or a JSON
list that does not decode, is a ParseError naming the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeGuard

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import is_int_token

PORT_STATES = ("NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", "UNKNOWN")
PHYSICAL_STATES = (
    "NOP",
    "SLEEP",
    "POLLING",
    "DISABLED",
    "ARMED",
    "LINK_UP",
    "LINK_ERROR_RECOVER",
    "PHY_TEST",
    "UNKNOWN",
    "OPA_OFFLINE",
    "OPA_TEST",
)

# ASCII digits, at most 20 (any 64-bit value), so int() of a matched number cannot fail.
_LINK_LINE = re.compile(r"link ([^\s/]+)/([0-9]{1,20})(?: (.*))?", re.ASCII)
_OLD_LINK_LINE = re.compile(r"([0-9]{1,20})/([0-9]{1,20}): ([^\s/]+)/([0-9]{1,20}):(?: (.*))?", re.ASCII)
_MAX_JSON_INT = 2**64  # numbers in rdma's JSON are kernel u32/u64 values
_CAPS_LINE = re.compile(r"caps: <(.*)>")
_JSON_START = re.compile(r"\[\s*(?:\{.*|\]\s*)?")
_INT_KEYS = ("netdev_index", "lid", "sm_lid", "lmc")
_TEXT_KEYS = ("state", "physical_state", "netdev", "subnet_prefix")


@dataclass(frozen=True)
class RdmaLink:
    """One RDMA port. ``netdev`` is None when the port has no netdev in the caller's namespace.

    ``subnet_prefix``/``lid``/``sm_lid``/``lmc`` are shown for InfiniBand ports only; ``netdev_index``
    and ``caps`` with ``-d`` (always in JSON for ``netdev_index``); ``ifindex`` is the RDMA device index
    (JSON and pre-4.19 text only).
    """

    dev: str
    port: int
    state: str
    physical_state: str
    netdev: str | None = None
    netdev_index: int | None = None
    subnet_prefix: str | None = None
    lid: int | None = None
    sm_lid: int | None = None
    lmc: int | None = None
    ifindex: int | None = None
    caps: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        """``dev/port`` as the tool prints it."""
        return f"{self.dev}/{self.port}"


def parse_rdma_link(text: str, source: str = "<text>") -> tuple[RdmaLink, ...]:
    """Every link in a text or JSON ``rdma link`` capture. Raises ParseError when there is none."""
    lines = split_checked_lines(text, source, "rdma link")
    links: list[RdmaLink] = []
    found = False
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if _JSON_START.fullmatch(stripped):
            found = True
            decoded, index = _read_json(lines, index, source)
            links += decoded
            continue
        link = _read_text_line(stripped, source, index)
        index += 1
        if link is None:
            continue
        found = True
        caps = _CAPS_LINE.fullmatch(lines[index].strip()) if index < len(lines) else None
        if caps is not None:
            link = _with_caps(link, caps.group(1))
            index += 1
        links.append(link)
    if not found:
        raise ParseError("no rdma link output (no 'link DEV/PORT ...' line or JSON list)", source=source)
    names = [link.name for link in links]
    if len(set(names)) != len(names):
        raise ParseError("the same RDMA port is listed twice", source=source)
    return tuple(links)


def _with_caps(link: RdmaLink, caps_text: str) -> RdmaLink:
    caps = tuple(cap.strip() for cap in caps_text.split(",") if cap.strip())
    return RdmaLink(**{**_fields(link), "caps": caps})


def _fields(link: RdmaLink) -> dict[str, Any]:
    return {name: getattr(link, name) for name in link.__dataclass_fields__}


def _read_text_line(stripped: str, source: str, index: int) -> RdmaLink | None:
    """The link on one text line; None when the line is not an ``rdma link`` line at all."""
    modern = _LINK_LINE.fullmatch(stripped)
    old = None if modern is not None else _OLD_LINK_LINE.fullmatch(stripped)
    if modern is None and old is None:
        return None
    if modern is not None:
        dev, port, rest, ifindex = modern.group(1), int(modern.group(2)), modern.group(3) or "", None
    else:
        assert old is not None
        dev, port, rest, ifindex = old.group(3), int(old.group(4)), old.group(5) or "", int(old.group(1))
    tokens = rest.split()
    if len(tokens) % 2:
        message = f"rdma link line is not 'key value' pairs: {stripped!r}"
        raise ParseError(message, source=source, line=index + 1)
    pairs = dict(zip(tokens[::2], tokens[1::2], strict=True))
    try:
        return _build(dev, port, pairs, ifindex)
    except ValueError as err:
        raise ParseError(f"{err}: {stripped!r}", source=source, line=index + 1) from None


def _build(dev: str, port: int, pairs: dict[str, Any], ifindex: int | None) -> RdmaLink:
    """A link from its key/value pairs. Raises ValueError naming what is missing or malformed."""
    for key in ("state", "physical_state"):
        if not isinstance(pairs.get(key), str):
            raise ValueError(f"rdma link {dev}/{port} has no {key}")
    if pairs["state"] not in PORT_STATES:
        raise ValueError(f"unknown port state {pairs['state']!r}")
    if pairs["physical_state"] not in PHYSICAL_STATES:
        raise ValueError(f"unknown physical state {pairs['physical_state']!r}")
    values: dict[str, Any] = {}
    for key in _INT_KEYS:
        if key in pairs:
            value = pairs[key]
            if isinstance(value, str) and is_int_token(value):
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _MAX_JSON_INT:
                raise ValueError(f"bad {key} {value!r}")
            values[key] = value
    for key in _TEXT_KEYS:
        if key in pairs and not isinstance(pairs[key], str):
            raise ValueError(f"bad {key} {pairs[key]!r}")
    return RdmaLink(
        dev=dev,
        port=port,
        state=pairs["state"],
        physical_state=pairs["physical_state"],
        netdev=pairs.get("netdev"),
        subnet_prefix=pairs.get("subnet_prefix"),
        ifindex=ifindex,
        **values,
    )


def _read_json(lines: list[str], index: int, source: str) -> tuple[list[RdmaLink], int]:
    """Links from the JSON list starting at ``index``; returns them and the index after the list."""
    text = "\n".join(line.strip() for line in lines[index:])
    try:
        decoded, end = json.JSONDecoder().raw_decode(text)
    except ValueError as err:
        raise ParseError(f"rdma link JSON does not decode: {err}", source=source, line=index + 1) from None
    if not isinstance(decoded, list) or not all(isinstance(item, dict) for item in decoded):
        raise ParseError("rdma link JSON is not a list of objects", source=source, line=index + 1)
    try:
        links = [_link_from_json(item) for item in decoded]
    except ValueError as err:
        raise ParseError(f"rdma link JSON: {err}", source=source, line=index + 1) from None
    return links, index + text.count("\n", 0, end) + 1


def _is_json_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_JSON_INT


def _link_from_json(item: dict[str, Any]) -> RdmaLink:
    name = item.get("ifname")
    if not isinstance(name, str):
        raise ValueError("object without an 'ifname' string")
    dev, _, port_text = name.partition("/")
    port = item.get("port", int(port_text) if is_int_token(port_text) else None)
    if not _is_json_count(port) or (port_text and str(port) != port_text):
        raise ValueError(f"{name}: bad or missing 'port'")
    for key in ("ifindex", *_INT_KEYS):
        value = item.get(key)
        if value is not None and not _is_json_count(value):
            raise ValueError(f"{name}: {key} {str(value)[:40]!r} is not a JSON number 0..2**64-1")
    link = _build(dev, port, item, item.get("ifindex"))
    caps = item.get("caps")
    if caps is None:
        return link
    if not isinstance(caps, list) or not all(isinstance(cap, str) for cap in caps):
        raise ValueError(f"{name}: 'caps' is not a list of strings")
    return RdmaLink(**{**_fields(link), "caps": tuple(caps)})
