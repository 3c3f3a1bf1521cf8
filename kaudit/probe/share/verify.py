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
from dataclasses import dataclass, field, replace
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
    held = "held"
    """It held the record it had processed past the record's lock (``--slow-worker``),
    until another worker had processed it too, before acknowledging it."""
    ack_failed = "ack_failed"
    """The commit that carried its ACCEPT failed for the record's partition (the error's
    name in :attr:`Event.error`)."""


@dataclass(frozen=True)
class Event:
    """One journal line: a worker incarnation did ``action`` to a record's delivery."""

    seq: int
    worker: int
    incarnation: int
    delivery_count: int
    action: Action
    at_ms: int = 0
    error: str = ""
    """:attr:`Action.ack_failed`: the error the commit answered for the partition."""


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
    """Deliveries the workers handled (each processed, released or rejected once)."""
    processings: int
    fate: Fate
    top_count: int = 0
    """The highest delivery count the broker reported for it (it may restart: after a
    leader change a record delivered again can be counted as its first delivery)."""
    why: str = ""
    wrong: str = ""
    """What is wrong with it under the expected semantics ("" when nothing)."""
    acknowledgements: Mapping[str, int] = field(default_factory=dict)
    """The workers' acknowledgements of it by outcome: ``accepted`` (its commit
    succeeded), ``ack_failed`` (its commit failed), ``released``, ``rejected``."""


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
            account = replace(account, wrong=wrong)
            out.violations.append(account)
        out.accounts.append(account)
        out.counts[account.fate.value] = out.counts.get(account.fate.value, 0) + 1
    out.holds = None if expect is None else not out.violations
    return out


HANDLED = (Action.processed, Action.released, Action.rejected)
"""The journal lines that each stand for one delivery a worker handled."""
ACKNOWLEDGED = (Action.accepted, Action.ack_failed, Action.released, Action.rejected)
"""The journal lines that each stand for one acknowledgement's outcome."""


def _account(seq: int, treated: Treatment, events: list[Event], limit: int,
             killed: Mapping[tuple[int, int], str]) -> Account:
    if not events:
        return Account(seq, treated, 0, 0, Fate.never_delivered,
                       why="acknowledged by the brokers, delivered to no worker while the run "
                           "lasted")
    deliveries = sum(e.action in HANDLED for e in events)
    top = max(e.delivery_count for e in events)
    processed = [e for e in events if e.action == Action.processed]

    acks = {a.value: n for a in ACKNOWLEDGED
            if (n := sum(e.action == a for e in events))}

    def made(fate: Fate, why: str = "") -> Account:
        return Account(seq, treated, deliveries, len(processed), fate, top, why,
                       acknowledgements=acks)

    if any(e.action == Action.rejected for e in events):
        return made(Fate.rejected)
    if treated == Treatment.poison:
        if top >= limit and not processed:
            return made(Fate.archived, f"released on each of its {deliveries} deliveries; "
                                       f"the broker counted {top}, the limit is {limit}")
        return made(Fate.unsettled, f"the broker had counted {top} of {limit} deliveries "
                                    "when the run stopped")
    if not processed:
        return made(Fate.unsettled, "delivered, never processed, when the run stopped")
    if len(processed) == 1:
        return made(Fate.processed)
    return made(Fate.processed_twice, _why_twice(events, killed))


ERRORS = {
    "INVALID_RECORD_STATE": "the record was no longer its to acknowledge: its lock had "
                            "expired",
    "NOT_LEADER_OR_FOLLOWER": "the partition's leader had changed",
    "FENCED_LEADER_EPOCH": "the partition's leader had changed",
    "UNKNOWN_TOPIC_OR_PART": "the partition had no leader",
    "LEADER_NOT_AVAILABLE": "the partition had no leader",
    "_TRANSPORT": "the connection to the partition's leader broke",
    "_TIMED_OUT": "no answer within the timeout",
    "REQUEST_TIMED_OUT": "no answer within the timeout",
    "SHARE_SESSION_NOT_FOUND": "the share session was gone (a leader change)",
    "INVALID_SHARE_SESSION_EPOCH": "the share session was gone (a leader change)",
}
"""What an acknowledgement's error means for the record, where Kafka's name says it."""


def _after(events: list[Event], first: Event) -> list[Event]:
    """What ``first``'s worker incarnation journaled about the record after processing it
    (journal order), up to its next delivery of it."""
    mine = [e for e in events if (e.worker, e.incarnation, e.delivery_count)
            == (first.worker, first.incarnation, first.delivery_count)]
    out = []
    for e in mine[mine.index(first) + 1:]:
        if e.action in HANDLED:
            break
        out.append(e)
    return out


def _why_twice(events: list[Event], killed: Mapping[tuple[int, int], str]) -> str:
    """Why a record was processed more than once: each processing but the last, told in
    turn, since each is a delivery whose acceptance did not stand. The deliveries go in the
    broker's count, which a worker may process out of time's order (a batch that waited on
    a held record is processed after its lock ran out); where a count repeats, the broker's
    count restarted, and the journals' clocks order them."""
    counts = [e.delivery_count for e in events if e.action in HANDLED]
    restarted = len(set(counts)) < len(counts)
    processed = sorted((e for e in events if e.action == Action.processed),
                       key=(lambda e: (e.at_ms, e.delivery_count)) if restarted
                       else (lambda e: (e.delivery_count, e.at_ms)))
    first = processed[0]
    again = [e.delivery_count for e in processed[1:]]
    recount = (f"; the broker counted the next delivery {min(again)} again (its count "
               "restarted)") if restarted and min(again) <= first.delivery_count else ""
    return "; then ".join(_why_again(events, p, killed, processed)
                          for p in processed[:-1]) + recount


def _overtaken(processed: list[Event], processing: Event, before_ms: int) -> Event | None:
    """A later delivery of the record that some worker processed before ``before_ms``: the
    broker had delivered it again by then, so ``processing``'s lock had run out (None when
    none was)."""
    return next((e for e in processed if e.delivery_count > processing.delivery_count
                 and e.at_ms < before_ms), None)


def _why_again(events: list[Event], processing: Event,
               killed: Mapping[tuple[int, int], str], processed: list[Event]) -> str:
    """Why the record was delivered again after ``processing``, from what its worker
    journaled next and what the other workers processed meanwhile."""
    said = f"worker {processing.worker} processed it (delivery {processing.delivery_count})"
    after = {e.action: e for e in _after(events, processing)}
    failed, accepted = after.get(Action.ack_failed), after.get(Action.accepted)
    failure = (f"its acceptance failed: {failed.error}"
               + (f" ({ERRORS[failed.error]})" if failed.error in ERRORS else "")
               if failed else "")
    # A late acceptance can be answered with no error: another worker's acceptance of the
    # record had been committed already, and nothing was left to refuse.
    answer = failure or ("its late acceptance met no error" if accepted else "")
    if (held := after.get(Action.held)) is not None:
        # Another worker processed it while it was held; or nobody else read its partition,
        # and it came back to the same worker after the hold.
        meanwhile = ("the broker delivered it again meanwhile"
                     if _overtaken(processed, processing, held.at_ms) else
                     "its lock ran out meanwhile")
        return (f"{said} and held it past its lock: {meanwhile}"
                + (f"; then {answer}" if answer else ""))
    if (late := _overtaken(processed, processing, processing.at_ms)) is not None:
        return (f"{said} after its lock had run out: worker {late.worker} had processed its "
                f"delivery {late.delivery_count} already" + (f"; {answer}" if answer else ""))
    if accepted and (late := _overtaken(processed, processing, accepted.at_ms)) is not None:
        return (f"{said}; its acceptance was answered only after its lock had run out "
                f"(worker {late.worker} had processed its delivery {late.delivery_count} "
                "already), with no error")
    if accepted:
        return (f"{said} and its acceptance was committed, yet it was delivered again "
                "(unknown why)")
    if (processing.worker, processing.incarnation) in killed:
        return (f"{said} and was {killed[(processing.worker, processing.incarnation)]} "
                "before its acceptance was committed: the broker delivered it again")
    if failure:
        return f"{said}, and {failure}: the broker delivered it again"
    return f"{said}, and no answer to its acceptance was seen: delivered again (unknown why)"


def explain_undelivered(result: ShareVerification, placed: Mapping[int, tuple[int, int]],
                        starts: Mapping[int, int | None], reset: str) -> None:
    """Say why each never-delivered record was not, where the group's share-partition start
    offsets (``starts``, by partition) show it: a record below its partition's start offset
    is one the group will never deliver (it started at ``reset``, or moved past it).
    ``placed`` gives each record's partition and offset."""
    known = {p: start for p, start in sorted(starts.items()) if start is not None}
    said = ", ".join(f"partition {p} from offset {start}" for p, start in known.items())
    why = (f"written below its partition's start offset ({said}; "
           f"share.auto.offset.reset={reset}): never to be delivered")

    def explained(account: Account) -> Account:
        if account.fate != Fate.never_delivered or account.seq not in placed:
            return account
        partition, offset = placed[account.seq]
        if partition not in known or offset >= known[partition]:
            return account
        return replace(account, why=why)

    result.accounts = [explained(a) for a in result.accounts]
    result.violations = [explained(a) for a in result.violations]


def _wrong(account: Account, limit: int, expect: str | None) -> str:
    if expect is None:
        return ""
    treated, fate = account.treatment, account.fate
    if treated == Treatment.reject:
        if account.processings:
            return "a rejected record was processed"
        return "" if fate == Fate.rejected else f"{fate.value}: never rejected"
    if treated == Treatment.poison:
        if fate == Fate.archived and account.top_count == limit:
            return ""
        return f"{fate.value} after {account.top_count} deliveries, not archived after " \
               f"exactly {limit}"
    if fate in (Fate.never_delivered, Fate.unsettled, Fate.rejected, Fate.archived):
        return f"{fate.value}: never processed"
    if fate == Fate.processed_twice and expect == "exactly-once":
        return f"processed {account.processings} times: {account.why}"
    return ""


def parse_event(line: str) -> Event | None:
    """One journal line (``seq worker incarnation delivery_count action at_ms [error]``);
    None for a line a killed worker left half-written."""
    parts = line.split()
    if len(parts) not in (6, 7):
        return None
    try:
        return Event(int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]),
                     Action(parts[4]), int(parts[5]), parts[6] if len(parts) == 7 else "")
    except ValueError:
        return None


def journal_line(event: Event) -> str:
    """The journal line of ``event`` (:func:`parse_event` reads it back); an error's name
    has no spaces."""
    error = f" {'_'.join(event.error.split())}" if event.error else ""
    return f"{event.seq} {event.worker} {event.incarnation} {event.delivery_count} " \
           f"{event.action.value} {event.at_ms}{error}\n"


@dataclass(frozen=True)
class ShareSecond:
    """What the workers did in one second of the run: each delivery they handled (one
    processed, released or rejected line each), those that were a redelivery, and the
    acceptances whose commit failed."""

    second: int
    processed: int = 0
    released: int = 0
    rejected: int = 0
    redelivered: int = 0
    ack_failed: int = 0


def per_second(events: Iterable[Event], started_ms: int) -> list[ShareSecond]:
    """The run second by second from ``started_ms`` (epoch ms) to its last event, every
    second present (a quiet second is a zero, not a gap). A redelivery is a delivery of a
    record some worker had handled before, whatever count the broker gave it (the count
    can restart after a leader change)."""
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    handled: set[int] = set()
    for e in sorted(events, key=lambda e: e.at_ms):
        if e.action not in (*HANDLED, Action.ack_failed):
            continue
        row = counts[max(0, (e.at_ms - started_ms) // 1000)]
        row[e.action.value] += 1
        if e.action in HANDLED:
            if e.seq in handled:
                row["redelivered"] += 1
            handled.add(e.seq)
    last = max(counts, default=-1)
    return [ShareSecond(second, **counts.get(second, {})) for second in range(last + 1)]
