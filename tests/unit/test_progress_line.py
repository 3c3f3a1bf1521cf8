"""Under -v, log records and probe's progress line never share a line of the terminal."""

from __future__ import annotations

import io
import logging
import re
import sys
import threading
from collections.abc import Iterator

import pytest

from kaudit.cli.app import configure_logging
from kaudit.cli.progress import ProgressLine, with_progress_line

PROGRESS = re.compile(r"kaudit probe: \[#* *\] +\d+% [\d,]+ sent(; verifying\.\.\.)?")
LOG = re.compile(r"kaudit: (INFO|WARNING): .+")
log = logging.getLogger("kaudit.probe.test")


class Terminal(io.StringIO):
    """What stderr is on an operator's terminal."""

    def __init__(self, tty: bool = True) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def screen(self) -> list[str]:
        """The lines left on screen: ``\\r`` goes back to the start of the line."""
        rows = []
        for raw in self.getvalue().split("\n"):
            row = ""
            for part in raw.split("\r"):
                row = part + row[len(part):]
            rows.append(row.rstrip())
        return [row for row in rows if row]


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[Terminal]:
    """stderr a terminal, outside CI, with logging set up as `kaudit -v` does.

    pytest's capture puts its own sys.stderr back before the test runs: tests give the
    terminal to ProgressLine, or set sys.stderr again themselves."""
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.delenv("CI", raising=False)
    logger = logging.getLogger("kaudit")
    saved = logger.handlers[:], logger.level, logger.propagate
    configure_logging(1)
    yield stream
    logger.handlers[:], logger.level, logger.propagate = saved


def assert_whole_lines(screen: list[str]) -> None:
    glued = [row for row in screen if not (PROGRESS.fullmatch(row) or LOG.fullmatch(row))]
    assert glued == [], f"log and progress share a line: {screen}"


def test_a_record_logged_mid_line_comes_after_the_ended_line(terminal: Terminal) -> None:
    with ProgressLine("kaudit probe", terminal) as show:
        assert show is not None
        show(1234, 0.4, False)
        log.info("leader of p0 moved")
        show(5000, 1.0, True)
    screen = terminal.screen()
    assert_whole_lines(screen)
    assert screen == ["kaudit probe: [##############################] 100% 5,000 sent; "
                      "verifying...", "kaudit: INFO: leader of p0 moved"]


def test_a_redraw_writes_the_held_records_above_the_line(terminal: Terminal) -> None:
    with ProgressLine("kaudit probe", terminal) as show:
        assert show is not None
        show(1000, 0.4, False)
        log.info("first")
        log.warning("second")
        show(1500, 0.5, False)
        log.info("third")
        show(3000, 1.0, True)
        log.info("verifying")  # no line on screen: written at once
    screen = terminal.screen()
    assert_whole_lines(screen)
    assert [row.split(": ", 1)[0] if PROGRESS.fullmatch(row) else row for row in screen] == [
        "kaudit: INFO: first", "kaudit: WARNING: second", "kaudit probe",
        "kaudit: INFO: third", "kaudit: INFO: verifying"]


def test_ctrl_c_ends_the_line_and_writes_what_was_held(terminal: Terminal,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", terminal)  # with_progress_line draws on sys.stderr
    handlers = logging.getLogger("kaudit").handlers[:]

    def interrupted(show: object) -> None:
        assert callable(show)
        show(10, 0.1, False)
        log.info("held")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with_progress_line(interrupted)
    screen = terminal.screen()
    assert_whole_lines(screen)
    assert screen[1:] == ["kaudit: INFO: held"] and PROGRESS.fullmatch(screen[0])
    assert logging.getLogger("kaudit").handlers == handlers  # -v's handler is put back


def test_records_from_another_thread_wait_for_the_line_too(terminal: Terminal) -> None:
    with ProgressLine("kaudit probe", terminal) as show:
        assert show is not None
        show(1, 0.0, False)
        thread = threading.Thread(target=lambda: [log.info("from %d", n) for n in range(50)])
        thread.start()
        for n in range(50):
            show(n, n / 50, False)
        thread.join()
        show(50, 1.0, True)
    screen = terminal.screen()
    assert_whole_lines(screen)
    assert sorted(row for row in screen if LOG.fullmatch(row)) == sorted(
        f"kaudit: INFO: from {n}" for n in range(50))


@pytest.mark.parametrize("tty,ci", [(False, None), (True, "true")], ids=["piped", "ci"])
def test_nothing_drawn_or_held_off_a_terminal(monkeypatch: pytest.MonkeyPatch, tty: bool,
                                              ci: str | None) -> None:
    stream = Terminal(tty)
    monkeypatch.setattr(sys, "stderr", stream)
    if ci:
        monkeypatch.setenv("CI", ci)
    else:
        monkeypatch.delenv("CI", raising=False)
    logger = logging.getLogger("kaudit")
    saved = logger.handlers[:], logger.level, logger.propagate
    try:
        configure_logging(1)
        handlers = logger.handlers[:]
        with ProgressLine("kaudit probe") as show:
            assert show is None
            assert logger.handlers == handlers  # not swapped: nothing would be held
            log.info("straight out")
            assert stream.getvalue() == "kaudit: INFO: straight out\n"
        assert with_progress_line(lambda show: show) is None
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved


def test_too_many_held_records_are_written_above_a_redrawn_line(
        terminal: Terminal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kaudit.cli.progress.HOLD_AT_MOST", 2)
    with ProgressLine("kaudit probe", terminal) as show:
        assert show is not None
        show(100, 0.5, False)
        log.info("one")
        log.info("two")  # no redraw comes while a fault schedule is waited out
        assert terminal.screen() == ["kaudit: INFO: one", "kaudit: INFO: two",
                                     "kaudit probe: [###############               ]  50% "
                                     "100 sent"]
    assert_whole_lines(terminal.screen())
