"""The incast test of the gate: N senders into one victim NIC per leaf, judged by host and switch
counters read before and after (plan, capture, judge; the stage glue is fabcheck.gate.incast_stage)."""
