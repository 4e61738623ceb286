"""NVLink domains in the inventory: group `nvlink_domains`, whose child groups are the domains (a rack's
trays); a GPU host in none is a domain of its own (an HGX server). Each member's IMEX address is its
host var `nvlink_address`, else `ansible_host`, else its name (docs/checks/nvlink.md)."""

from __future__ import annotations

from dataclasses import dataclass

NVLINK_DOMAINS_GROUP = "nvlink_domains"
NVLINK_ADDRESS_VAR = "nvlink_address"


@dataclass(frozen=True)
class NvlinkDomain:
    name: str
    hosts: tuple[str, ...]  # inventory order
    addresses: tuple[str, ...]  # IMEX node addresses, host order
    declared: bool = True  # False: a lone server, no group names it


@dataclass(frozen=True)
class NvlinkPlan:
    """Every declared NVLink domain (empty: each GPU host is its own)."""

    domains: tuple[NvlinkDomain, ...] = ()

    def domain_of(self, host: str) -> NvlinkDomain:
        for domain in self.domains:
            if host in domain.hosts:
                return domain
        return NvlinkDomain(host, (host,), (), declared=False)
