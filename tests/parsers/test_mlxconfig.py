"""fabcheck.parsers.mlxconfig replays real `mlxconfig` outputs (tests/data/real/host/INDEX.tsv): the
`-e` table with its `*` rows, a plain `q` of a ConnectX-7, the `set` table, indexed and array rows, and
the value rules the checks match the intent with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.mlxconfig import MlxconfigValue, matches, parse_mlxconfig, spelled

REAL = Path(__file__).resolve().parents[1] / "data/real/host"


def real(name: str) -> str:
    return (REAL / name).read_text()


def test_the_e_table_has_default_current_and_next_boot_with_the_star_rows() -> None:
    shown = parse_mlxconfig(real("mlxconfig-e-q-connectx4-star-rows.txt"), "cx4")
    assert shown.columns == ("Default", "Current", "Next Boot") and shown.shows_current
    assert shown.device_type == "ConnectX4"
    keep = shown.params["KEEP_IB_LINK_UP_P2"]
    assert keep.marked and keep.default is not None and keep.current is not None
    assert (keep.default.text, keep.current.text, keep.next_boot.text) == ("False(0)", "True(1)", "True(1)")
    memic = shown.params["MEMIC_SIZE_LIMIT"]  # a change waiting for the next boot
    assert memic.marked and memic.current is not None and memic.current.name == "_256KB"
    assert (memic.next_boot.name, memic.next_boot.number) == ("DISABLED", 0)
    assert not shown.params["KEEP_LINK_UP_ON_BOOT_P2"].marked
    array = shown.params["ESWITCH_HAIRPIN_DESCRIPTORS"].next_boot
    assert (array.text, array.name, array.number) == ("Array[0..7]", None, None)


def test_indexed_rows_and_plain_numbers_beside_enums() -> None:
    shown = parse_mlxconfig(real("mlxconfig-e-q-connectx9-array-expanded.txt"), "cx9")
    assert list(shown.params) == [f"PCI_DOWNSTREAM_PORT_OWNER[{i}]" for i in (0, 1, 2, 4)]
    first = shown.params["PCI_DOWNSTREAM_PORT_OWNER[0]"]
    assert first.current == MlxconfigValue("148", None, 148)
    assert first.next_boot == MlxconfigValue("DEVICE_DEFAULT(0)", "DEVICE_DEFAULT", 0)


def test_the_real_header_not_aligned_with_its_rows_is_read_by_name() -> None:
    shown = parse_mlxconfig(real("mlxconfig-e-q-connectx6lx-header.txt"), "cx6lx")
    assert shown.columns == ("Default", "Current", "Next Boot") and shown.device_type == "ConnectX6LX"
    assert shown.params["CRYPTO_POLICY"].current == MlxconfigValue("UNRESTRICTED(1)", "UNRESTRICTED", 1)


def test_a_plain_query_of_a_connectx7_has_next_boot_only() -> None:
    shown = parse_mlxconfig(real("mlxconfig-q-connectx7-next-boot-excerpt.txt"), "cx7")
    assert shown.columns == ("Next Boot",) and not shown.shows_current
    ats = shown.params["ATS_ENABLED"]
    assert ats.current is None and ats.default is None and matches(False, ats.next_boot)
    assert shown.params["MEMIC_ATOMIC"].next_boot.number == 2  # a value wider than its column
    assert shown.params["EXP_ROM_UEFI_x86_ENABLE"].next_boot.text == "True(1)"  # a lower-case name
    assert shown.params["MODULE_SPLIT_M0"].next_boot.text == "Array[0..15]"
    assert len(shown.params) == 35


def test_the_set_table_shows_next_boot_and_new() -> None:
    shown = parse_mlxconfig(real("mlxconfig-set-connectx6-next-boot-new.txt"), "set")
    assert shown.columns == ("Next Boot", "New")
    wait = shown.params["BOOT_UNDI_NETWORK_WAIT"]
    assert wait.next_boot.number == 0 and wait.new is not None and wait.new.number == 30


@pytest.mark.parametrize(
    ("intent", "shown", "equal"),
    [
        ("ETH", "ETH(2)", True),
        ("eth", "ETH(2)", True),
        (2, "ETH(2)", True),
        ("2", "ETH(2)", True),
        ("IB", "ETH(2)", False),
        (False, "False(0)", True),
        (True, "False(0)", False),
        (0, "False(0)", True),
        (255, "255", True),
        (48, "4", False),
        ("per_mkey", "per_mkey(0)", True),
        (0, "Array[0..7]", False),
        ("N/A", "N/A", False),
    ],
)
def test_values_match_by_name_in_any_case_or_by_number(
    intent: str | int | bool, shown: str, equal: bool
) -> None:
    assert matches(intent, MlxconfigValue.read(shown)) is equal


def test_the_intent_value_is_spelled_as_set_takes_it() -> None:
    assert [spelled(v) for v in (False, True, 255, "ETH")] == ["0", "1", "255", "ETH"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-E- Failed to open the device\n", "mlxconfig failed: Failed to open the device"),
        ("Device #1:\n----------\n", "no Configurations: table"),
        ("Configurations:        Default     Later\n", "unknown value column"),
        (
            "Configurations:     Default     Current     Next Boot\n   X_P1    1    2\n",
            "X_P1: 2 value(s) under 3",
        ),
        ("Configurations:     Next Boot\n   X_P1    1\n   X_P1    2\n", "X_P1 shown twice"),
        ("Configurations:     Next Boot\n   lower_case    1\n", "not a parameter row"),
    ],
)
def test_what_is_not_a_query_table_is_refused(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_mlxconfig(text, "bad")


def test_the_intent_takes_every_parameter_name_a_real_query_shows() -> None:
    """Names such as EXP_ROM_UEFI_x86_ENABLE (the ConnectX-7 query) hold lower case: the intent's
    nic_firmware[].config keys accept what mlxconfig prints, and refuse what it never does."""
    from pydantic import ValidationError

    from fabcheck.intent.model import NicFirmware

    for sample in (
        "mlxconfig-q-connectx7-next-boot-excerpt.txt",
        "mlxconfig-e-q-connectx9-array-expanded.txt",
    ):
        names = list(parse_mlxconfig(real(sample), sample).params)
        assert NicFirmware(psid="MT_0000000838", config=dict.fromkeys(names, 0)).config.keys() == set(names)
    for bad in ("ats_enabled", "ATS ENABLED", "ATS_ENABLED[x]"):
        with pytest.raises(ValidationError):
            NicFirmware(psid="MT_0000000838", config={bad: 0})
