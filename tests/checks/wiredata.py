"""What the wire check tests share: the intent's default link limits and one module's own thresholds."""

from __future__ import annotations

from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.wire_records import Thresholds

LIMITS = FabricIntent().link_health

# The thresholds a QSFP28 SR4 prints in `ethtool -m` (SFF-8636 page 3, as link-pcie-firmware.md §3 shows).
TEMP = Thresholds(high_alarm=75.0, high_warning=70.0, low_warning=0.0, low_alarm=-5.0)
VOLT = Thresholds(high_alarm=3.63, high_warning=3.465, low_warning=3.135, low_alarm=2.97)
BIAS = Thresholds(high_alarm=13.0, high_warning=12.0, low_warning=4.0, low_alarm=3.0)
TX = Thresholds(high_alarm=5.0, high_warning=3.0, low_warning=-7.3, low_alarm=-10.3)
RX = Thresholds(high_alarm=5.4, high_warning=2.4, low_warning=-10.3, low_alarm=-13.3)
