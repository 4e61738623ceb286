"""Echo and line assembly for a PTY session without a line editor (what a tty in cooked mode does)."""

from __future__ import annotations

ERASE = ("\x7f", "\x08")


class LineReader:
    """Turns typed characters into (echo text, finished lines); None in lines stands for Ctrl-C.

    Lines end on CR, LF or CRLF (netmiko sends LF). Escape sequences (arrow keys) are ignored.
    """

    def __init__(self) -> None:
        self.buffer: list[str] = []
        self.after_cr = False
        self.in_escape = False

    def feed(self, data: str) -> tuple[str, list[str | None]]:
        echo: list[str] = []
        lines: list[str | None] = []
        for ch in data:
            if self.in_escape:
                self.in_escape = not ch.isalpha() and ch != "~"
                continue
            if ch == "\n" and self.after_cr:
                self.after_cr = False
                continue
            self.after_cr = ch == "\r"
            if ch in "\r\n":
                echo.append("\r\n")
                lines.append("".join(self.buffer))
                self.buffer.clear()
            elif ch in ERASE:
                if self.buffer:
                    self.buffer.pop()
                    echo.append("\b \b")
            elif ch == "\x03":
                self.buffer.clear()
                lines.append(None)
            elif ch == "\x1b":
                self.in_escape = True
            elif ch == "\t" or ch >= " ":
                self.buffer.append(ch)
                echo.append(ch)
        return "".join(echo), lines
