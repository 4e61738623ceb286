"""The progress bar draws on a terminal only, from any thread, and leaves a clean line behind."""

from __future__ import annotations

import io
import threading

from fabcheck.checks.model import Status
from fabcheck.report.progress import BAR_WIDTH, Progress


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_each_step_on_one_line_and_clears_it() -> None:
    stream = FakeTty()
    bar = Progress(stream)
    bar.on_start(4)
    bar.on_done("gpu01", Status.PASS)
    bar.on_done("gpu02", Status.FAIL)
    bar.on_done("gpu03", Status.ERROR)
    bar.close()
    frames = stream.getvalue().split("\r\x1b[K")
    assert frames[0] == "" and "\n" not in stream.getvalue()
    assert frames[1:] == [
        f"[{'.' * BAR_WIDTH}] 0/4 hosts  0 fail  0 error",
        f"[{'#' * 6}{'.' * 18}] 1/4 hosts  0 fail  0 error  gpu01",
        f"[{'#' * 12}{'.' * 12}] 2/4 hosts  1 fail  0 error  gpu02",
        f"[{'#' * 18}{'.' * 6}] 3/4 hosts  1 fail  1 error  gpu03",
        "",  # close() clears the line
    ]


def test_quiet_when_not_a_terminal() -> None:
    stream = io.StringIO()  # a pipe or a file: isatty() is False
    bar = Progress(stream)
    bar.on_start(2)
    bar.on_done("gpu01", Status.PASS)
    bar.close()
    assert not bar.enabled and stream.getvalue() == ""


def test_many_threads_count_every_node_once() -> None:
    stream = FakeTty()
    bar = Progress(stream, noun="switches")
    bar.on_start(64)
    threads = [threading.Thread(target=bar.on_done, args=(f"n{i}", Status.PASS)) for i in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stream.getvalue().split("\r\x1b[K")[-1].startswith(f"[{'#' * BAR_WIDTH}] 64/64 switches")
    assert bar.line("x" * 100).endswith("  " + "x" * 40)  # a long name is cut to fit
