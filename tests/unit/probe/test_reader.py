"""The live pass's reader process: what it hands over, and the probe's side of the pipe,
give the verifier exactly what reading in the probe's own process gives it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kaudit.cluster import client
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.ledger import Ledger
from kaudit.probe.payload import encoder
from kaudit.probe.readback import ConsumerPass, ReaderProcessPass, ReadPass
from kaudit.probe.reader import RECORD, encode_batch
from kaudit.probe.verifier import Verification, Verifier

RUN = bytes(range(16))
OTHER = bytes(16)


class _Msg:
    """One fetched message, or an end of partition (``value`` None and ``eof``)."""

    def __init__(self, partition: int, offset: int, value: bytes | None = None,
                 eof: bool = False) -> None:
        self._p, self._o, self._v, self._eof = partition, offset, value, eof

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes | None:
        return self._v

    def error(self) -> Any:
        return client.KafkaError(client.KafkaError._PARTITION_EOF) if self._eof else None


class _Fetched:
    """The batches a consumer has fetched, handed out in order."""

    def __init__(self, batches: list[list[_Msg]]) -> None:
        self.batches = batches

    def consume(self, num_messages: int, timeout: float) -> list[_Msg]:
        return self.batches.pop(0) if self.batches else []


class _Exited:
    def __init__(self, code: int) -> None:
        self.code = code

    def wait(self) -> int:
        return self.code


def _ledger() -> Ledger:
    ledger = Ledger(2)
    for p in (0, 1):
        for offset in range(4):
            ledger.acked(p, ledger.next_seq(p), offset, None)
    ledger.finish()
    return ledger


def _batches() -> list[list[_Msg]]:
    ours, theirs = encoder(RUN, 100), encoder(OTHER, 100)
    return [
        [_Msg(0, 0, ours(0, 0, 1)), _Msg(1, 0, ours(0, 1, 1)), _Msg(0, 1, b"short"),
         _Msg(0, 2, ours(1, 2, 1))],
        [_Msg(1, 1, theirs(1, 3, 1)), _Msg(1, 2, None), _Msg(0, 3, ours(1, 4, 1)),
         _Msg(1, 3, ours(3, 5, 1)), _Msg(0, 4, eof=True), _Msg(1, 4, eof=True)],
    ]


def _pass(kind: type[ReadPass], verifier: Verifier) -> Any:
    read = object.__new__(kind)
    ReadPass.__init__(read, ConnectionSettings("x:1"), [0, 1], {0: 0, 1: 0}, verifier, 1)
    return read


def _summary(read: ReadPass, result: Verification) -> tuple[Any, ...]:
    return (read.position, {p: at for p, (at, _) in read.reached_end.items()}, result.lost,
            result.duplicated, result.reordered, result.unexpected,
            [(s.partition, s.lost, s.duplicated) for s in result.partitions])


def test_the_pipe_gives_the_verifier_what_the_consumer_in_process_gives_it() -> None:
    ledger = _ledger()
    here = _pass(ConsumerPass, Verifier(ledger, RUN))
    here.run_id, here.consumer = RUN, _Fetched(_batches())
    assert [here.step(), here.step()] == [4, 4]  # data messages, foreign and empty included
    here.verifier.pass_done(1)

    there = _pass(ReaderProcessPass, Verifier(ledger, RUN))
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    there.fd, there.rest, there.proc = read_fd, b"", object()
    encoded = b"".join(encode_batch(b, RUN).tobytes() for b in _batches())
    assert len(encoded) == 10 * RECORD * 8  # one record per message and per end reached
    # Written in pieces that split records: the pass keeps the rest for the next turn.
    os.write(write_fd, encoded[:29])
    first = there.step()
    os.write(write_fd, encoded[29:])
    assert first + there.step() + there.step() == 8
    there.verifier.pass_done(1)
    os.close(write_fd)
    os.close(read_fd)

    assert _summary(there, there.verifier.result()) == _summary(here, here.verifier.result())
    # Partition 1's seq 1 and 2 were never read: lost on both sides alike.
    assert here.verifier.lost_sequences(1) == [1, 2]


def test_a_reader_that_ends_on_its_own_says_why_and_reads_no_further(tmp_path: Path) -> None:
    there = _pass(ReaderProcessPass, Verifier(_ledger(), RUN))
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    there.err = tmp_path / "reader.err"
    there.err.write_text("Traceback ...\nKafkaException: _AUTHENTICATION: SASL failed\n")
    there.fd, there.rest, there.proc = read_fd, b"", _Exited(1)
    os.close(write_fd)
    assert there.step(timeout=0.1) == 0
    assert there.failure == ("the read-back process ended with exit code 1: "
                             "KafkaException: _AUTHENTICATION: SASL failed")
    assert there.proc is None and there.step() == 0
    os.close(read_fd)
