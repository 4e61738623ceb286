"""The IB verbs work-completion status (and vendor error) an NCCL failure message prints."""

from __future__ import annotations

import re

_STATUS_NUMBER = re.compile(r"(?:\bwith error\s+|\bstatus\s*=\s*(?:[A-Za-z_][\w ]*?\()?)(\d{1,9})", re.ASCII)
_STATUS_NAME = re.compile(r"IBV_WC_([A-Z_]+)")
_VENDOR_ERR = re.compile(r"vendor[ _]err\s*[= ]?\s*(?:0x([0-9a-fA-F]{1,8})|(\d{1,9}))", re.ASCII)

# ibv_wc_status codes by enum name (IBV_WC_<name>) and by ibv_wc_status_str() wording.
_WC_NAMES = (
    "SUCCESS",
    "LOC_LEN_ERR",
    "LOC_QP_OP_ERR",
    "LOC_EEC_OP_ERR",
    "LOC_PROT_ERR",
    "WR_FLUSH_ERR",
    "MW_BIND_ERR",
    "BAD_RESP_ERR",
    "LOC_ACCESS_ERR",
    "REM_INV_REQ_ERR",
    "REM_ACCESS_ERR",
    "REM_OP_ERR",
    "RETRY_EXC_ERR",
    "RNR_RETRY_EXC_ERR",
    "LOC_RDD_VIOL_ERR",
    "REM_INV_RD_REQ_ERR",
    "REM_ABORT_ERR",
    "INV_EECN_ERR",
    "INV_EEC_STATE_ERR",
    "FATAL_ERR",
    "RESP_TIMEOUT_ERR",
    "GENERAL_ERR",
)
_WC_PHRASES = (
    ("rnr retry counter exceeded", 13),
    ("retry counter exceeded", 12),
    ("retry exceeded", 12),
    ("work request flushed", 5),
    ("local length error", 1),
    ("local protection error", 4),
    ("remote invalid request", 9),
    ("remote access error", 10),
    ("remote operation error", 11),
    ("response timeout", 20),
)


def completion_status(message: str) -> tuple[int | None, int | None]:
    """(IBV_WC status, vendor error) printed in a completion error message, None where absent."""
    status: int | None = None
    lowered = message.lower()
    # "with error N" elsewhere is an errno (e.g. a failed ibv_modify_qp), not a work completion.
    number = _STATUS_NUMBER.search(message) if "completion" in lowered or "ibv_wc" in lowered else None
    if number:
        status = int(number.group(1))
    else:
        name = _STATUS_NAME.search(message)
        if name and name.group(1) in _WC_NAMES:
            status = _WC_NAMES.index(name.group(1))
        else:
            status = next((code for phrase, code in _WC_PHRASES if phrase in lowered), None)
    vendor = _VENDOR_ERR.search(message)
    if vendor is None:
        return status, None
    return status, int(vendor.group(1), 16) if vendor.group(1) else int(vendor.group(2))
