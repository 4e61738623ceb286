"""The whole-fabric gate: plan_gate (gate/plan.py) decides what a run judges and derives the desired
state once; run_gate (gate/fabric.py) runs the declared stages in order (gate/stages.py lists them, one
module each), every read stage reading its nodes through the one reader (gate/reader.py: pool, deadline,
per-node errors, the snapshot tape of gate/snapshot.py); catalog.py lists every declared check."""
