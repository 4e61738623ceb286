"""The gate's stages: collect evidence per node (probes), judge it (checks). The switch stage lives in
`fabcheck.gate.switches`; the host stage moves here from `fabcheck.validate`."""
