"""Fabric benchmark runs and reports: nccl-tests sweeps read from a run directory (curves), judged
(regimes, anomalies, scaling, efficiency), compared A vs B, drawn and written as HTML, Markdown or JSON;
and `fabcheck bench nccl`, the run loop that fills such a directory through a launcher."""
