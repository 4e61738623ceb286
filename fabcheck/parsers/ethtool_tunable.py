"""`ethtool --get-tunable NETDEV pfc-prevention-tout`: the NIC's PFC storm prevention timeout. Pure.

What ethtool prints, from its source (no captured transcript of a real NIC is in the corpus yet, so the
format is unverified against a live host; tests/data/corpus/INDEX.tsv marks the sample
nic-tunable/ethtool-get-tunable-pfc-prevention-tout-mlx5-factory-from-source.txt UNVERIFIED):

- ethtool.c `do_gtunable()` / `print_tunable()`, added by ethtool commit b717ed22d984 ("ethtool: add
  support for get/set ethtool_tunable", https://lore.kernel.org/netdev/20200719235928.336953-1-gvaradar@cisco.com/):
  the tunable is a u16 (ETHTOOL_TUNABLE_U16) printed as `"%s: %" PRIu16 "\\n"`, i.e. one line
  `pfc-prevention-tout: 100`. A failing ioctl prints `pfc-prevention-tout: Cannot get tunable` on stderr
  and exits non-zero (255); `--set-tunable` failures go through perror(), e.g.
  `pfc-prevention-tout: Operation not supported` or `pfc-prevention-tout: Invalid argument`.
- The unit and range, from the kernel's mlx5 driver (torvalds/linux:
  drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c@55808762f3c33c86d7d7eae9b136c0856d8c3916,
  mlx5e_get/set_pfc_prevention_tout; linux commit 2afa609f5c97 "net/mlx5e: PFC stall prevention
  support"): milliseconds; 0 disables it; otherwise 80..8000 (EINVAL outside); 65535 ("auto") sets
  100; the device starts at 8000 ms; a device without the stall-detect capability answers EOPNOTSUPP.
"""

from __future__ import annotations

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import read_int

TUNABLE = "pfc-prevention-tout"
U16_MAX = 65535


def parse_pfc_prevention_tout(text: str, source: str) -> int:
    """The timeout in milliseconds from the one `pfc-prevention-tout: N` line (0 = off)."""
    lines = [line.strip() for line in split_checked_lines(text, source, "ethtool") if line.strip()]
    if len(lines) != 1:
        raise ParseError(f"expected one '{TUNABLE}: N' line, got {len(lines)} lines", source=source)
    name, colon, value = lines[0].partition(":")
    if not colon or name.strip() != TUNABLE:
        raise ParseError(f"expected '{TUNABLE}: N', got {lines[0][:80]!r}", source=source, line=1)
    number = read_int(value.strip(), source=source, line=1, what=f"{TUNABLE} value")
    if not 0 <= number <= U16_MAX:
        raise ParseError(f"{TUNABLE} {number} is not a u16 (0..{U16_MAX})", source=source, line=1)
    return number
