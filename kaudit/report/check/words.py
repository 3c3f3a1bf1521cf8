"""A guarantee in words an operator cannot misread: what the producer's settings can give,
and what survives how many broker failures, said apart (one number beside a semantics
label read as a contradiction: "exactly-once, loss tolerance 0")."""

from __future__ import annotations

from kaudit.check.findings import Guarantee, Semantics


def producer_gives(g: Guarantee) -> str:
    """The delivery semantics the producer side can get: for a topic alone, the best any
    producer can; for a producer, what its settings give."""
    if g.producer is None:
        if g.semantics is Semantics.exactly_once:
            return "exactly-once at best, with an idempotent or transactional producer"
        return f"{g.semantics.value} at best"
    if g.semantics is Semantics.exactly_once:
        return ("exactly-once within one producer session (a restart can duplicate)"
                if g.within_session else "exactly-once (transactions)")
    if g.semantics is Semantics.at_least_once:
        return "at-least-once (a retry can duplicate)"
    return "at-most-once (a failed send is not sent again)"


def survives(g: Guarantee) -> str:
    """How many broker failures acknowledged writes survive, and how many brokers may be
    down while acks=all writes go on."""
    if g.loss_tolerance <= 0:
        loss = "no broker failure: one can lose acknowledged writes"
    else:
        loss = (f"{g.loss_tolerance} broker failure{'s' if g.loss_tolerance > 1 else ''} "
                "without losing an acknowledged write")
    if g.write_tolerance < 0:
        writes = "acks=all writes are refused even with every broker up"
    elif g.write_tolerance == 0:
        writes = "acks=all writes stop while any broker is down"
    else:
        writes = (f"acks=all writes go on with {g.write_tolerance} broker"
                  f"{'s' if g.write_tolerance > 1 else ''} down")
    return f"{loss}; {writes}"
