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
transactional id, which fences the old one and aborts what it left open.
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
        self.committing = False
        self.ended = 0
        self.aborted_on_purpose = 0

    def can_send(self, now: float) -> bool:
        """Whether a record may be sent now; opens a transaction when none is."""
        if self.committing:
            return False
        if self.opened_at is None:
            self.producer.begin_transaction()
            self.opened_at = now
        return True

    def sent(self, partition: int, seq: int) -> None:
        self.members.append((partition, seq))

    def turn(self, now: float, last: bool = False) -> None:
        """End the open transaction when it is full or a second old (or ``last``)."""
        if self.opened_at is None:
            return
        if last or self.committing or len(self.members) >= self.size \
                or now - self.opened_at >= OPEN_AT_MOST_S:
            self._end(abort=not self.committing and not last
                      and math.floor((self.ended + 1) * self.abort_ratio)
                      > self.aborted_on_purpose)

    def _end(self, abort: bool) -> None:
        try:
            if abort:
                # Flush first: the aborted records really reach the log (a reader has
                # something to hide) and every delivery report is served before the abort.
                self.producer.flush(self.timeout)
                self.producer.abort_transaction(self.timeout)
                self.aborted_on_purpose += 1
            else:
                self.committing = True
                self.producer.commit_transaction(self.timeout)
            self._done(aborted=abort)
        except client.KafkaException as exc:
            err = exc.args[0]
            if err.retriable() and not err.fatal():
                return  # tried again next turn; nothing is sent meanwhile
            self._note(f"transaction {'abort' if abort else 'commit'} failed: {err.str()}")
            if err.txn_requires_abort():
                self.producer.abort_transaction(self.timeout)
                self._done(aborted=True)
                return
            self._done(aborted=None)
            self.producer = self._restart()

    def _done(self, aborted: bool | None) -> None:
        """Tell the books: committed (None is "no known outcome")."""
        self.producer.poll(0)  # the delivery reports of the ended transaction come first
        members, self.members = self.members, []
        self.opened_at, self.committing = None, False
        self.ended += 1
        if aborted is not False:
            self._settle(members, bool(aborted))
