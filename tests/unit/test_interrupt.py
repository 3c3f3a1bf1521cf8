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


def test_sigterm_as_interrupt_raises_keyboard_interrupt_in_its_block_only() -> None:
    from kaudit.cli.interrupt import sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_as_interrupt_leaves_a_thread_that_cannot_set_handlers_as_it_is() -> None:
    import threading

    from kaudit.cli.interrupt import sigterm_as_interrupt

    ran: list[bool] = []

    def work() -> None:
        with sigterm_as_interrupt():
            ran.append(True)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert ran == [True]
