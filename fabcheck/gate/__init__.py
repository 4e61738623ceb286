"""The whole-fabric gate: plan_gate (gate/plan.py) decides what a run judges and derives the desired
state once; run_gate (gate/fabric.py) runs the declared stages in order (gate/stages.py lists them, one
module each); catalog.py lists every declared check."""
