"""What the canary says at its start about a topic it did not create."""

from __future__ import annotations

from kaudit.canary.layout import canary_layout, layout_warnings
from kaudit.cluster.topics import TopicLayout


def test_its_own_layout_is_one_partition_per_broker_and_says_nothing() -> None:
    assert canary_layout(3) == (3, 3, 2) and canary_layout(1) == (1, 1, 1)
    own = TopicLayout({0: 1, 1: 2, 2: 3}, 3, 2)
    assert layout_warnings("kaudit-canary", own, [1, 2, 3]) == []
    unreadable = TopicLayout({0: 1, 1: 2, 2: 3}, 3, None)  # configs not readable: no guess
    assert layout_warnings("kaudit-canary", unreadable, [1, 2, 3]) == []


def test_an_auto_created_topic_names_the_brokers_it_cannot_watch_and_its_settings() -> None:
    auto = TopicLayout({0: 2}, 1, 1)
    warnings = layout_warnings("orders-canary", auto, [1, 2, 3])
    assert warnings == [
        "warning: orders-canary has 1 partition(s) for 3 broker(s): broker(s) 1, 3 lead "
        "nothing the canary writes, so a failure of theirs is not seen (a topic the canary "
        "creates has one partition per broker)",
        "warning: orders-canary was not created by the canary: replication factor 1, "
        "min.insync.replicas 1 (the canary creates 3 and 2); what it finds holds for these "
        "settings"]


def test_enough_partitions_whose_leaders_crowd_on_one_broker_still_leave_others_unwatched(
        ) -> None:
    crowded = TopicLayout({0: 1, 1: 1, 2: 2, 3: 2}, 3, 2)
    [warning] = layout_warnings("kaudit-canary", crowded, [1, 2, 3])
    assert "has 4 partition(s) for 3 broker(s): broker(s) 3 lead nothing" in warning
