"""Pure: what became of each record a ``probe share`` run wrote, from what its workers
journaled, and whether that is what the expected semantics allow.

Every record's treatment is fixed by its sequence number (:func:`treatment`), so the
account knows what should have happened to it: an ``accept`` record is processed and
accepted; a ``release`` record is released on its first delivery and must come back; a
``reject`` record is rejected and must never come back; a ``poison`` record is released on
every delivery and must be archived after exactly the delivery count limit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

SPREAD = 0.6180339887498949
"""The golden ratio's fraction: seq * SPREAD mod 1 spreads treatments evenly over the
sequence (and so over partitions and workers), without a random seed to carry."""


class Treatment(StrEnum):
    """What the workers do with a record, fixed by its sequence number."""

    accept = "accept"
    release = "release"
    reject = "reject"
    poison = "poison"


@dataclass(frozen=True)
class Mix:
    """The shares of records released once, rejected and poisoned (the rest: accepted)."""

    release: float = 0.0
    reject: float = 0.0
    poison: float = 0.0

    def __post_init__(self) -> None:
        if min(self.release, self.reject, self.poison) < 0 or \
                self.release + self.reject + self.poison > 1:
            raise ValueError("the shares must be >= 0 and add up to 1 at most")


def treatment(seq: int, mix: Mix) -> Treatment:
    """The treatment of record ``seq`` under ``mix``: the same in every worker and in the
    verifier."""
    x = (seq * SPREAD) % 1.0
    if x < mix.poison:
        return Treatment.poison
    if x < mix.poison + mix.reject:
        return Treatment.reject
    if x < mix.poison + mix.reject + mix.release:
        return Treatment.release
    return Treatment.accept


class Action(StrEnum):
    """What a worker journaled about one delivery of a record."""

    processed = "processed"
    """It processed the record (before acknowledging ACCEPT)."""
    accepted = "accepted"
    """Its ACCEPT was committed."""
    released = "released"
    rejected = "rejected"


@dataclass(frozen=True)
class Event:
    """One journal line: a worker incarnation did ``action`` to a record's delivery."""

    seq: int
    worker: int
    incarnation: int
    delivery_count: int
    action: Action
    at_ms: int = 0


class Fate(StrEnum):
    """What finally became of a record."""

    processed = "processed"
    processed_twice = "processed_twice"
    rejected = "rejected"
    archived = "archived"
    never_delivered = "never_delivered"
    unsettled = "unsettled"
    """Delivered, but not brought to its end by the time the run stopped."""


@dataclass(frozen=True)
class Account:
    """One record: its treatment, its deliveries and processings, its fate and why."""

    seq: int
    treatment: Treatment
    deliveries: int
    """Distinct deliveries seen (by the delivery count the broker reported)."""
    processings: int
    fate: Fate
    why: str = ""
    wrong: str = ""
    """What is wrong with it under the expected semantics ("" when nothing)."""


@dataclass
class ShareVerification:
    """Every record's account, the counts by fate, and the verdict."""

    accounts: list[Account] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    expect: str | None = None
    holds: bool | None = None
    """Whether the run kept the expected semantics (None: nothing was expected)."""
    violations: list[Account] = field(default_factory=list)


SEMANTICS = ("at-least-once", "exactly-once")
"""What ``--expect`` takes. At-most-once has no meaning here: a share group delivers again
what is released or whose lock expires, whatever the member does, and a member that
accepted before processing would only hide its losses from this account."""


def verify(written: Iterable[int], events: Iterable[Event], mix: Mix, limit: int,
           killed: Mapping[tuple[int, int], str], expect: str | None) -> ShareVerification:
    """Account for each record in ``written`` (the acknowledged sequence numbers) from the
    workers' ``events``; ``limit`` is the delivery count limit, ``killed`` the worker
    incarnations the run killed (with how), ``expect`` an entry of :data:`SEMANTICS`."""
    by_seq: dict[int, list[Event]] = defaultdict(list)
    for event in events:
        by_seq[event.seq].append(event)
    out = ShareVerification(expect=expect)
    for seq in sorted(set(written)):
        account = _account(seq, treatment(seq, mix), by_seq.get(seq, []), limit, killed)
        wrong = _wrong(account, limit, expect)
        if wrong:
            account = Account(**{**account.__dict__, "wrong": wrong})
            out.violations.append(account)
        out.accounts.append(account)
        out.counts[account.fate.value] = out.counts.get(account.fate.value, 0) + 1
    out.holds = None if expect is None else not out.violations
    return out


def _account(seq: int, treated: Treatment, events: list[Event], limit: int,
             killed: Mapping[tuple[int, int], str]) -> Account:
    deliveries = len({e.delivery_count for e in events})
    processed = [e for e in events if e.action == Action.processed]
    if not events:
        return Account(seq, treated, 0, 0, Fate.never_delivered,
                       "acknowledged by the brokers, delivered to no worker while the run "
                       "lasted")
    if any(e.action == Action.rejected for e in events):
        return Account(seq, treated, deliveries, len(processed), Fate.rejected)
    if treated == Treatment.poison:
        top = max(e.delivery_count for e in events)
        if top >= limit and not processed:
            return Account(seq, treated, deliveries, 0, Fate.archived,
                           f"released on each of its {top} deliveries; the limit is {limit}")
        return Account(seq, treated, deliveries, len(processed), Fate.unsettled,
                       f"delivered {top} of {limit} times when the run stopped")
    if not processed:
        return Account(seq, treated, deliveries, 0, Fate.unsettled,
                       "delivered, never processed, when the run stopped")
    if len(processed) == 1:
        return Account(seq, treated, deliveries, 1, Fate.processed)
    return Account(seq, treated, deliveries, len(processed), Fate.processed_twice,
                   _why_twice(processed, events, killed))


def _why_twice(processed: list[Event], events: list[Event],
               killed: Mapping[tuple[int, int], str]) -> str:
    first = min(processed, key=lambda e: (e.delivery_count, e.at_ms))
    incarnation = (first.worker, first.incarnation)
    accepted = any(e.action == Action.accepted and (e.worker, e.incarnation) == incarnation
                   and e.delivery_count == first.delivery_count for e in events)
    if incarnation in killed and not accepted:
        return (f"worker {first.worker} processed it (delivery {first.delivery_count}) and "
                f"was {killed[incarnation]} before its acceptance was committed: the broker "
                "delivered it again")
    if not accepted:
        return (f"worker {first.worker} processed it (delivery {first.delivery_count}) but "
                "its acceptance was not committed (its lock expired first): delivered again")
    return "delivered again after an acceptance was committed (unknown why)"


def _wrong(account: Account, limit: int, expect: str | None) -> str:
    if expect is None:
        return ""
    treated, fate = account.treatment, account.fate
    if treated == Treatment.reject:
        if account.processings:
            return "a rejected record was processed"
        return "" if fate == Fate.rejected else f"{fate.value}: never rejected"
    if treated == Treatment.poison:
        if fate == Fate.archived and account.deliveries == limit:
            return ""
        return f"{fate.value} after {account.deliveries} deliveries, not archived after " \
               f"exactly {limit}"
    if fate in (Fate.never_delivered, Fate.unsettled, Fate.rejected, Fate.archived):
        return f"{fate.value}: never processed"
    if fate == Fate.processed_twice and expect == "exactly-once":
        return f"processed {account.processings} times: {account.why}"
    return ""


def parse_event(line: str) -> Event | None:
    """One journal line (``seq worker incarnation delivery_count action at_ms``); None for a
    line a killed worker left half-written."""
    parts = line.split()
    if len(parts) != 6:
        return None
    try:
        return Event(int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]),
                     Action(parts[4]), int(parts[5]))
    except ValueError:
        return None


def journal_line(event: Event) -> str:
    """The journal line of ``event`` (:func:`parse_event` reads it back)."""
    return f"{event.seq} {event.worker} {event.incarnation} {event.delivery_count} " \
           f"{event.action.value} {event.at_ms}\n"
