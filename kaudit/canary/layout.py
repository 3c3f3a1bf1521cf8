"""What the canary says at its start about a topic it did not create: where it cannot watch
every broker, and where the topic's settings are not the ones it would have chosen."""

from __future__ import annotations

from kaudit.cluster.topics import TopicLayout


def canary_layout(brokers: int) -> tuple[int, int, int]:
    """The topic the canary creates on ``brokers`` brokers: one partition per broker (each
    broker leads one), replication factor min(3, brokers), min.insync.replicas min(2, RF)."""
    rf = min(3, brokers)
    return brokers, rf, min(2, rf)


def layout_warnings(topic: str, layout: TopicLayout, brokers: list[int]) -> list[str]:
    """One line per way ``layout`` falls short of the canary's own topic on ``brokers``."""
    out = []
    unled = sorted(set(brokers) - set(layout.leaders.values()))
    if unled:
        which = ", ".join(map(str, unled))
        out.append(f"warning: {topic} has {len(layout.leaders)} partition(s) for "
                   f"{len(brokers)} broker(s): broker(s) {which} lead nothing the canary "
                   "writes, so a failure of theirs is not seen (a topic the canary creates "
                   "has one partition per broker)")
    _, rf, min_isr = canary_layout(len(brokers))
    if layout.replication_factor != rf or layout.min_insync_replicas not in (min_isr, None):
        shown = "unreadable" if layout.min_insync_replicas is None \
            else str(layout.min_insync_replicas)
        out.append(f"warning: {topic} was not created by the canary: replication factor "
                   f"{layout.replication_factor}, min.insync.replicas {shown} (the canary "
                   f"creates {rf} and {min_isr}); what it finds holds for these settings")
    return out
