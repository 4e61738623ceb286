"""How nodes are read: one round trip per node, raw sections back, nothing judged here (that is
fabcheck.checks' job). See host.py (the host probe table), script.py, ssh.py, sm.py and backends/."""
