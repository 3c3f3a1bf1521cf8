"""The canary's transactions (``--transactional``): each holds at most ``--txn-size``
records or one second of them, whichever ends first, so a read_committed reader sees
records within about a second of their send.

A transaction ends in one of three ways, and the books are told which:

- committed: its acknowledged records are expected to be read, as without transactions;
- aborted (on purpose, ``--abort-ratio``, or because the commit needed it): its records
  must never be read, a read of one is ``aborted_visible``;
- the commit failed with no known outcome: its records are ``indeterminate``.

A commit that times out is retried on the next turn, and no record is sent meanwhile (the
producer may not send while a commit is pending): the canary's produce availability says so.
A fatal error ends the producer's session: a new one is started with the same
transactional id, which fences the old one and aborts what it left open. librdkafka raises
a fatal error from ``poll`` too (a commit that failed fatally raises it there once more, and
one can arrive between calls), so the delivery reports are served here, by :meth:`serve`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kaudit.cluster import client

OPEN_AT_MOST_S = 1.0


class Transactions:
    """The open transaction and how the transactions so far ended."""

    def __init__(self, producer: Any, restart: Callable[[], Any], size: int,
                 abort_ratio: float, timeout: float,
                 settle: Callable[[list[tuple[int, int]], bool], None],
                 note: Callable[[str], None]) -> None:
        self.producer = producer
        self._restart = restart
        self.size, self.abort_ratio, self.timeout = size, abort_ratio, timeout
        self._settle, self._note = settle, note
        self.members: list[tuple[int, int]] = []
        """(partition, sequence) of the open transaction's records."""
        self.opened_at: float | None = None
        self.ending: str | None = None
        """``commit`` or ``abort`` while that call is under way (tried again each turn)."""
        self._on_purpose = False
        self.broken = False
        """The session ended on a fatal error and no new one could be started yet."""
        self.ended = 0
        self.aborted_on_purpose = 0

    @property
    def committing(self) -> bool:
        return self.ending == "commit"

    def can_send(self, now: float) -> bool:
        """Whether a record may be sent now; opens a transaction when none is."""
        if self.broken:
            self._new_session()
        if self.ending is not None or self.broken:
            return False
        if self.opened_at is None:
            try:
                self.producer.begin_transaction()
            except client.KafkaException as exc:
                self._failed("begin", exc.args[0])
                return False
            self.opened_at = now
        return True

    def sent(self, partition: int, seq: int) -> None:
        self.members.append((partition, seq))

    def turn(self, now: float, last: bool = False) -> None:
        """End the open transaction when it is full or a second old (or ``last``)."""
        if self.opened_at is None:
            return
        if self.ending is not None:
            self._end(self.ending, self._on_purpose)
        elif last or len(self.members) >= self.size or now - self.opened_at >= OPEN_AT_MOST_S:
            on_purpose = not last and math.floor((self.ended + 1) * self.abort_ratio) \
                > self.aborted_on_purpose
            self._end("abort" if on_purpose else "commit", on_purpose)

    def _end(self, action: str, on_purpose: bool = False) -> None:
        self.ending, self._on_purpose = action, on_purpose
        try:
            if action == "abort":
                # Flush first: the aborted records really reach the log (a reader has
                # something to hide) and every delivery report is served before the abort.
                self.producer.flush(self.timeout)
                self.producer.abort_transaction(self.timeout)
            else:
                self.producer.commit_transaction(self.timeout)
        except client.KafkaException as exc:
            err = exc.args[0]
            if err.retriable() and not err.fatal():
                return  # tried again next turn; nothing is sent meanwhile
            if action == "commit" and err.txn_requires_abort():
                self._note(f"transaction commit failed: {err.str()}; aborted")
                self._end("abort")
            else:
                self._failed(action, err)
            return
        self.aborted_on_purpose += 1 if on_purpose else 0
        self._done(aborted=action == "abort")

    def serve(self, timeout: float = 0) -> None:
        """Serve the producer's delivery reports; a fatal error raised there ends the
        session (the open transaction's outcome is then unknown)."""
        err = client.serve_reports(self.producer, timeout)
        if err is not None and not self.broken:
            self._failed("session", err)

    def _failed(self, action: str, err: Any) -> None:
        """An error no retry fixes: the open transaction's outcome is unknown, and a fatal
        one ends the session."""
        self._note(f"transactional producer failed: {err.str()}" if action == "session"
                   else f"transaction {action} failed: {err.str()}")
        ends_session = err.fatal() or action != "begin"
        # Set first: the reports served below may raise the same fatal error again.
        self.broken = self.broken or ends_session
        if self.opened_at is not None:
            self._done(aborted=None)
        self.ending = None
        if ends_session:
            self._new_session()

    def _new_session(self) -> None:
        try:
            self.producer = self._restart()
        except Exception as exc:  # the cluster out of reach: tried again on the next send
            self._note(f"no new transactional session yet: {exc}")
            return
        self.broken = False

    def _done(self, aborted: bool | None) -> None:
        """Tell the books: committed (None is "no known outcome")."""
        # The delivery reports of the ended transaction come first.
        err = client.serve_reports(self.producer)
        members, self.members = self.members, []
        self.opened_at, self.ending = None, None
        self.ended += 1
        if aborted is not False:
            self._settle(members, bool(aborted))
        if err is not None and not self.broken:
            self._failed("session", err)  # raised after the commit: it ends only the session
