"""Asking brokers one question each, on kafka-python clients that know one broker only.

A frozen (SIGSTOPped) broker still accepts TCP connections and then never answers, and
kafka-python's bootstrap waits out its whole timeout on the first address it picks. So a
read that wants any broker's answer, or every broker's, asks them all at once
(:func:`ask_brokers`), each in its own daemon thread on its own client, and the caller waits
no longer than its deadline: a frozen broker's thread and client are left to end in their
own time, never waited on. A read that wants one answer and can afford to wait asks them
in turn (:func:`first_in_turn`). What a broker did not answer comes back with why.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kaudit.cluster.model import Broker
from kaudit.cluster.protocol_config import client_of
from kaudit.connection.redact import redact
from kaudit.waiting import Deadline

T = TypeVar("T")

Ask = Callable[[Any, Broker, Deadline], T]
"""The question: ``ask(client, broker, deadline)``, on a client that knows only ``broker``;
it returns the answer (never None) or raises."""
Refused = Callable[[Exception, Broker], "str | None"]
"""A caller's own words for what a broker's client or question raised: the whole reason, kept
even when the deadline has passed meanwhile; None leaves it to :func:`why_not_read`."""


class Unanswered(Exception):
    """No broker answered: every broker's reason, in the order they were asked."""

    def __init__(self, whys: list[str]) -> None:
        super().__init__("; ".join(whys))
        self.whys = whys


@dataclass
class BrokerAsk(Generic[T]):
    """One broker's question and answer; filled in by its thread."""

    broker: Broker
    client: Any = None
    answer: T | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def answered(self) -> bool:
        return self.done.is_set() and self.answer is not None

    def why(self, deadline: Deadline) -> str:
        """Why there is no answer: what went wrong, or the broker's silence."""
        return self.error or no_answer(self.broker, deadline)


@contextlib.contextmanager
def ask_brokers(brokers: Sequence[Broker], config: dict[str, Any], deadline: Deadline,
                ask: Ask[T], name: str, refused: Refused | None = None
                ) -> Iterator[list[BrokerAsk[T]]]:
    """Ask every broker at once, each in a daemon thread named ``name-<broker id>`` on its
    own client (what it raises said by ``refused``, else by :func:`why_not_read`); yields
    their :class:`BrokerAsk` (in ``brokers``' order) to wait on. Each client is closed once
    its thread is done and the caller has left the block (it may ask a client more itself),
    in a daemon thread: a frozen broker never holds the caller."""
    asks: list[BrokerAsk[T]] = [BrokerAsk(b) for b in brokers]
    for each in asks:
        threading.Thread(target=_ask_one, args=(each, config, deadline, ask, refused), daemon=True,
                         name=f"{name}-{each.broker.id}").start()
    try:
        yield asks
    finally:
        for each in asks:
            threading.Thread(target=_close_when_done, args=(each,), daemon=True).start()


def _ask_one(each: BrokerAsk[T], config: dict[str, Any], deadline: Deadline,
             ask: Ask[T], refused: Refused | None) -> None:
    try:
        each.client = client_of(each.broker, config, deadline)
        each.answer = ask(each.client, each.broker, deadline)
    except Exception as exc:
        said = refused(exc, each.broker) if refused is not None else None
        each.error = said if said is not None else why_not_read(exc, each.broker, deadline)
    finally:
        each.done.set()


def _close_when_done(each: BrokerAsk[Any]) -> None:
    each.done.wait()
    _close(each.client)


def _close(client: Any) -> None:
    if client is not None:
        with contextlib.suppress(Exception):  # a frozen broker's client: nothing to report
            client.close()


def first_answer(asks: Sequence[BrokerAsk[T]], deadline: Deadline,
                 tried: frozenset[int] | set[int] = frozenset()) -> BrokerAsk[T] | None:
    """The first broker (in ``asks``' order, leaving out the ids in ``tried``) whose answer
    came back, waiting until one has, all have failed or the deadline passes."""
    while True:
        ready = next((a for a in asks if a.answered and a.broker.id not in tried), None)
        if ready is not None or deadline.expired() or all(a.done.is_set() for a in asks):
            return ready
        pending = next(a for a in asks if not a.done.is_set())
        pending.done.wait(min(0.05, deadline.left()))


def every_answer(asks: Sequence[BrokerAsk[T]], deadline: Deadline, grace: float = 0.0
                 ) -> Iterator[tuple[BrokerAsk[T], T | None]]:
    """Each ask with its answer (None: there is none, :meth:`BrokerAsk.why` says why), in
    order, each waited for until the deadline (and ``grace`` seconds more)."""
    for each in asks:
        each.done.wait(deadline.left() + grace)
        yield each, each.answer if each.answered else None


def unanswered(asks: Sequence[BrokerAsk[Any]], deadline: Deadline) -> list[str]:
    """Each broker's reason for giving no answer, in order."""
    return [a.why(deadline) for a in asks]


def first_in_turn(brokers: Sequence[Broker], config: dict[str, Any], deadline: Deadline,
                  ask: Ask[T], turn: float | None = None) -> T:
    """The answer of the first of ``brokers``, asked one after another, that answers; each
    client closed when its turn ends. With ``turn``, each broker has at most that many
    seconds (a frozen one leaves time to ask the next) and no broker is asked once the
    deadline has passed. Raises :class:`Unanswered` when none answers."""
    whys = []
    for broker in brokers:
        client = None
        each = deadline if turn is None else Deadline(deadline.slice(turn))
        try:
            client = client_of(broker, config, each)
            return ask(client, broker, each)
        except Exception as exc:
            whys.append(why_not_read(exc, broker, each))
            if turn is not None and deadline.expired():
                break
        finally:
            _close(client)
    raise Unanswered(whys)


def no_answer(broker: Broker, deadline: Deadline) -> str:
    """A broker's silence, said."""
    return f"broker {broker.id} ({broker.host}:{broker.port}) gave no answer within " \
        f"{deadline.seconds:g}s"


def why_not_read(exc: BaseException, broker: Broker, deadline: Deadline) -> str:
    """What ``exc``, raised while asking ``broker``, says about it (secrets redacted)."""
    name = exc.__class__.__name__
    if "Timeout" in name or deadline.expired():
        return no_answer(broker, deadline)
    text = redact(str(exc)).strip().splitlines()
    return f"broker {broker.id}: {name}" + (f": {text[0][:160]}" if text else "")
