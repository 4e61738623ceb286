"""Facts about the verbs API that several parsers and checks explain to users."""

from __future__ import annotations

# enum ibv_wc_status (libibverbs verbs.h): the code NCCL and perftest print after a failed completion.
WC_STATUS = {
    0: ("IBV_WC_SUCCESS", "success"),
    1: ("IBV_WC_LOC_LEN_ERR", "local length error"),
    2: ("IBV_WC_LOC_QP_OP_ERR", "local QP operation error"),
    3: ("IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"),
    4: ("IBV_WC_LOC_PROT_ERR", "local protection error: memory registration / GPUDirect (ACS, IOMMU, BAR)"),
    5: ("IBV_WC_WR_FLUSH_ERR", "work request flushed: the QP had already failed (look for the first error)"),
    6: ("IBV_WC_MW_BIND_ERR", "memory window bind error"),
    7: ("IBV_WC_BAD_RESP_ERR", "bad response"),
    8: ("IBV_WC_LOC_ACCESS_ERR", "local access error"),
    9: ("IBV_WC_REM_INV_REQ_ERR", "remote invalid request"),
    10: ("IBV_WC_REM_ACCESS_ERR", "remote access error: rkey/permissions or peer memory registration"),
    11: ("IBV_WC_REM_OP_ERR", "remote operation error"),
    12: (
        "IBV_WC_RETRY_EXC_ERR",
        "transport retry counter exceeded: packets lost on the path "
        "(PFC/ECN misconfiguration, link flaps, wrong GID/route)",
    ),
    13: ("IBV_WC_RNR_RETRY_EXC_ERR", "receiver-not-ready retry counter exceeded"),
    14: ("IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation"),
    15: ("IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"),
    16: ("IBV_WC_REM_ABORT_ERR", "remote aborted"),
    17: ("IBV_WC_INV_EECN_ERR", "invalid EE context number"),
    18: ("IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"),
    19: ("IBV_WC_FATAL_ERR", "fatal error"),
    20: ("IBV_WC_RESP_TIMEOUT_ERR", "response timeout"),
    21: ("IBV_WC_GENERAL_ERR", "general error"),
}


def describe_wc_status(status: int | None) -> str:
    if status is None:
        return "no completion status printed"
    name, meaning = WC_STATUS.get(status, (f"status {status}", "unknown completion status"))
    return f"{name} ({status}): {meaning}"
