"""Text from hosts can hold anything (NUL, escape sequences): make it safe for XML and HTML output."""

from __future__ import annotations

import re

# XML 1.0 allows tab, newline, carriage return and everything from U+0020 up except surrogates and
# U+FFFE/U+FFFF; HTML treats the same C0 controls as parse errors.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML cannot hold shown as its escape (`\\x00`), never dropped."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
