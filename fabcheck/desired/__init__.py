"""Desired state: the ONE place where the validated intent becomes what each device must hold.

intent (typed, validated) + per-device inventory -> desired records (pure, frozen). The roles render and
apply these records, and the gate's checks compare what it collects against the same records, so no
value of the intent is derived anywhere else.
"""

from fabcheck.desired.nic import DesiredHost, DesiredNic, desired_host, desired_nic
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort, desired_switch

__all__ = [
    "DesiredHost",
    "DesiredNic",
    "DesiredSwitch",
    "DesiredSwitchPort",
    "desired_host",
    "desired_nic",
    "desired_switch",
]
