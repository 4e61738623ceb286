"""How nodes are read: one round trip per node, raw outputs back, nothing judged here (that is
fabcheck.checks' job). Hosts: host.py (the host probe table), script.py, ssh.py, backends/; subnet
managers: sm.py; switches: probes.py (the probe protocol), switch_probes.py (each platform's table),
switch.py (one read-only session per switch)."""
