"""Ctrl-C and SIGTERM during a long command: the first winds the work down, the second aborts."""

from __future__ import annotations

import os
import signal

import pytest

from kaudit.cli.interrupt import graceful_interrupt


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_first_signal_asks_to_wind_down_the_second_aborts(
        sig: signal.Signals, capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(sig)
    with graceful_interrupt("winding down") as interrupted:
        os.kill(os.getpid(), sig)  # handled before kill() returns to Python code
        assert interrupted.is_set()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), sig)
    assert capsys.readouterr().err == "winding down\n"
    assert signal.getsignal(sig) is before  # put back afterwards
