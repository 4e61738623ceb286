"""Built-in switch drivers; importing this package registers them (see fabcheck.switch.driver)."""

from fabcheck.switch.platforms import eos, nvue, sonic

__all__ = ["eos", "nvue", "sonic"]
