"""Every source cell of the real switch-output INDEX files can be resolved by anyone.

The INDEX files are tests/data/real/INDEX.tsv (the outputs the gate's parsers read) and
tests/data/real/<platform>/INDEX.tsv (the strings the push drivers read). A source cell follows this
grammar (single spaces; nothing else is allowed outside a note):

    cell       := "none" | reference (separator reference)*
    separator  := "; " | " + "
    reference  := (repository | url) [" " note]
    repository := owner "/" repo ":" path "@" commit
    owner      := [A-Za-z0-9][A-Za-z0-9-]{0,38}          (GitHub's rule)
    repo       := [A-Za-z0-9._-]{1,100}
    path       := [A-Za-z0-9._/+-]+                       (no space, '@', ';' or parenthesis)
    commit     := 40 lowercase hexadecimal digits
    url        := "https://" host [path] with no space or parenthesis, not ending in . , ; or :
    note       := "(" text ")", parentheses inside balanced

`none` says no public source was found: the row's what-it-shows cell must then say UNVERIFIED. A
research-index number, a path on someone's machine or a prose description is none of these, so the
row fails. Every file a row names must exist, every data file beside an INDEX must be named by a row
with a source (a file without one does not belong in the real corpus), and each platform needs at
least MIN_RESOLVABLE rows with a source across the INDEX files.

tests/data/corpus/INDEX.tsv (file, kind, source, truth) holds the host-side samples the host parsers read
and, under kind `switch`, public switch outputs the lab mocks are compared with: those switch rows follow
the same grammar and may not say none (a switch capture without a nameable source is not kept there).
Its host-side rows are outside this test.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
CORPUS = REAL.parent / "corpus"
INDEXES = sorted(REAL.rglob("INDEX.tsv"))
PLATFORMS = ("sonic", "nvue", "eos")
# The host NIC's wire views (ethtool -S/--show-fec/-m, mlxlink) under tests/data/real/host (issue 35).
# ib: the InfiniBand fabric tools (ibnetdiscover, saquery, ibqueryerrors, perfquery, vendstat; issue 37).
# nvlink: nvidia-smi -q Fabric, nvidia-smi nvlink -s, nvidia-imex-ctl and nodes_config.cfg (issue 38).
# nccl: NCCL_DEBUG=INFO channel lines of each release (issue 38).
KNOWN_PLATFORMS = (*PLATFORMS, "host", "ib", "nvlink", "nccl")
MIN_RESOLVABLE = 10
NO_FILE = {"-", "(none)"}
# Folders under tests/data/real that hold no captures of their own: the parsers' truth files.
NOT_CAPTURES = {"truth"}

_REPOSITORY = re.compile(
    r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/(?P<repo>[A-Za-z0-9._-]{1,100})"
    r":(?P<path>[A-Za-z0-9._/+-]+)@(?P<commit>[0-9a-f]{40})"
)
_URL = re.compile(r"https://[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?:/[^\s()]*)?")
_SEPARATORS = ("; ", " + ")


class CitationError(ValueError):
    """A source cell that is not `none` or a list of resolvable references."""


@dataclass(frozen=True)
class Reference:
    target: str  # owner/repo:path@commit or https URL
    note: str  # the parenthesised note without its parentheses ('' if none)


def _note_end(cell: str, start: int) -> int:
    """Index just past the note that opens at cell[start] == '('."""
    depth = 0
    for at in range(start, len(cell)):
        if cell[at] == "(":
            depth += 1
        elif cell[at] == ")":
            depth -= 1
            if depth == 0:
                return at + 1
    raise CitationError(f"unbalanced parenthesis in the note at {start}: {cell[start : start + 60]!r}")


def parse_source(cell: str) -> list[Reference]:
    """The references of a source cell ([] for `none`); CitationError for anything else."""
    if cell == "none":
        return []
    references: list[Reference] = []
    at = 0
    while True:
        target = _REPOSITORY.match(cell, at) or _URL.match(cell, at)
        if target is None:
            raise CitationError(
                f"not owner/repo:path@<40-hex commit> or https URL at {at}: {cell[at : at + 60]!r}"
            )
        text = target.group(0)
        if text.startswith("https://") and text[-1] in ".,;:":
            raise CitationError(f"URL ends in punctuation: {text!r}")
        at = target.end()
        note = ""
        if cell.startswith(" (", at):
            end = _note_end(cell, at + 1)
            note, at = cell[at + 2 : end - 1], end
        references.append(Reference(text, note))
        if at == len(cell):
            return references
        separator = next((s for s in _SEPARATORS if cell.startswith(s, at)), None)
        if separator is None:
            raise CitationError(f"expected '; ' or ' + ' between references at {at}: {cell[at : at + 60]!r}")
        at += len(separator)


@dataclass(frozen=True)
class Row:
    index: Path
    line: int
    file: str
    platform: str
    source: str
    shows: str

    @property
    def where(self) -> str:
        return f"{self.index.relative_to(REAL)}:{self.line}"


def rows_of(index: Path) -> list[Row]:
    with index.open(newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        fields = reader.fieldnames or []
        shows = next(name for name in ("what it shows", "shows") if name in fields)
        return [
            Row(index, number, row["file"], row["platform"], row["source"], row[shows])
            for number, row in enumerate(reader, start=2)
        ]


ROWS = [row for index in INDEXES for row in rows_of(index)]


# -- the grammar, tried on what it must refuse and accept ---------------------------------------------

GOOD = [
    ("none", []),
    (
        "sonic-net/sonic-utilities:config/main.py@691b1bbc4fd2b71657d1b0b334c37136deb51526",
        [Reference("sonic-net/sonic-utilities:config/main.py@691b1bbc4fd2b71657d1b0b334c37136deb51526", "")],
    ),
    (
        "a/b:c.md@"
        + "0" * 40
        + " (save; a note (nested), with ; and + inside) + https://example.org/x_y?z=1",
        [
            Reference("a/b:c.md@" + "0" * 40, "save; a note (nested), with ; and + inside"),
            Reference("https://example.org/x_y?z=1", ""),
        ],
    ),
    (
        "https://github.com/sonic-net/sonic-buildimage/issues/11216 (prompt dropped); x/y:p@" + "f" * 40,
        [
            Reference("https://github.com/sonic-net/sonic-buildimage/issues/11216", "prompt dropped"),
            Reference("x/y:p@" + "f" * 40, ""),
        ],
    ),
]
BAD = [
    "",  # empty: say none
    "none found",  # prose after none
    "public GitHub markdown (CL 5.16.0 lab notes), research index file id 53386806422",  # an index number
    "research index file id 53386806422",
    "GitHub markdown notes (repository not recorded; via /work/shared/corpus/switch/x.txt)",  # a local path
    "/work/shared/corpus/switch/cumulus-nvue-interface-swp16-qos-roce-status.txt",
    "sonic-net/sonic-utilities:config/main.py",  # no commit
    "sonic-net/sonic-utilities:config/main.py@691b1bb",  # short commit
    "sonic-net/sonic-utilities:config/main.py@691B1BBC4FD2B71657D1B0B334C37136DEB51526",  # upper case
    "sonic-net/sonic-utilities@691b1bbc4fd2b71657d1b0b334c37136deb51526",  # no path
    "sonic-net/sonic-utilities#1234",  # an issue shorthand: write its https URL
    "http://example.org/page",  # not https
    "https://example.org/page.",  # trailing punctuation
    "a/b:c@" + "0" * 40 + " (unclosed note",
    "a/b:c@" + "0" * 40 + " (note) trailing prose",
    "a/b:c@" + "0" * 40 + ", d/e:f@" + "1" * 40,  # a comma is not a separator
    "a/b:c@" + "0" * 40 + ";d/e:f@" + "1" * 40,  # nor a bare ';'
    "issue 22 (about 1 s a change)",
    "a/b:c@" + "0" * 40 + " + ",  # a separator with nothing after it
]


@pytest.mark.parametrize(("cell", "references"), GOOD, ids=range(len(GOOD)))
def test_the_grammar_accepts_resolvable_sources(cell: str, references: list[Reference]) -> None:
    assert parse_source(cell) == references


@pytest.mark.parametrize("cell", BAD)
def test_the_grammar_refuses_everything_else(cell: str) -> None:
    with pytest.raises(CitationError):
        parse_source(cell)


# -- the INDEX files ----------------------------------------------------------------------------------


def test_the_index_files_are_found() -> None:
    assert {index.relative_to(REAL).as_posix() for index in INDEXES} >= {
        "INDEX.tsv",
        "sonic/INDEX.tsv",
        "nvue/INDEX.tsv",
        "eos/INDEX.tsv",
    }


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.where)
def test_every_source_is_resolvable(row: Row) -> None:
    references = parse_source(row.source)
    if not references:
        assert "unverified" in row.shows.lower(), (
            f"{row.where}: source none, but the row does not say UNVERIFIED"
        )


@pytest.mark.parametrize("row", [row for row in ROWS if row.file not in NO_FILE], ids=lambda row: row.where)
def test_every_named_file_exists_and_has_a_source(row: Row) -> None:
    assert (row.index.parent / row.file).is_file(), f"{row.where}: {row.file} does not exist"
    assert row.source != "none", f"{row.where}: {row.file} sits in the real corpus with no source"


def test_every_capture_in_the_real_corpus_is_named_by_an_index_row() -> None:
    named = {(row.index.parent / row.file).resolve() for row in ROWS if row.file not in NO_FILE}
    captures = {
        path.resolve()
        for path in REAL.rglob("*")
        if path.is_file()
        and path.name != "INDEX.tsv"
        and not NOT_CAPTURES & set(path.relative_to(REAL).parts)
    }
    assert sorted(str(path.relative_to(REAL)) for path in captures - named) == []


def test_every_row_names_a_known_platform() -> None:
    assert {row.platform for row in ROWS} <= set(KNOWN_PLATFORMS)


def cites(row: Row) -> bool:
    """The row names at least one resolvable source (a malformed cell counts as none; it fails above)."""
    try:
        return bool(parse_source(row.source))
    except CitationError:
        return False


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_platform_has_enough_resolvable_rows(platform: str) -> None:
    resolvable = Counter(row.platform for row in ROWS if cites(row))
    assert resolvable[platform] >= MIN_RESOLVABLE


# -- the switch captures of the host-side corpus -------------------------------------------------------


def corpus_switch_rows() -> list[dict[str, str]]:
    with (CORPUS / "INDEX.tsv").open(newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [row for row in reader if row["kind"] == "switch"]


@pytest.mark.parametrize("row", corpus_switch_rows(), ids=lambda row: row["file"])
def test_every_corpus_switch_capture_is_cited_and_present(row: dict[str, str]) -> None:
    assert parse_source(row["source"]), f"{row['file']}: a switch capture needs a source, not none"
    assert (CORPUS / row["file"]).is_file()


def test_every_corpus_switch_file_is_named() -> None:
    named = {row["file"] for row in corpus_switch_rows()}
    present = {
        path.relative_to(CORPUS).as_posix() for path in (CORPUS / "switch").iterdir() if path.is_file()
    }
    assert sorted(present - named) == []
