"""Random runs, random logs derived from them by known mutations: the verifier's counts
must equal the mutations applied. Plus the memory bound at a million messages."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from kaudit.probe.ledger import Ledger
from kaudit.probe.outcomes import CLASSES
from kaudit.probe.payload import ProbeRecord
from kaudit.probe.verifier import Verification, Verifier

RUN = bytes(range(16))

# What happens to one send. Acked sends get at most one mutation, so that the expected
# counts are exactly the mutations (the interactions are covered by hand-built tests).
_ACKED_FATES = ["clean", "clean", "clean", "drop", "dup", "miss", "misplace", "swap"]
_KIND = st.sampled_from(["acked"] * 6 + ["failed", "indeterminate", "pending", "aborted"])


@dataclass
class Expected:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        [*CLASSES, "duplicate_copies"], 0))

    def add(self, name: str, n: int = 1) -> None:
        self.counts[name] += n


@st.composite
def runs(draw: st.DrawFn) -> tuple[Ledger, list[list[tuple[int, int]]],
                                   list[list[tuple[int, int]]], Expected]:
    """A ledger, the pass-1 and pass-2 logs per partition, and the expected counts."""
    n_parts = draw(st.integers(1, 3))
    ledger = Ledger(n_parts)
    expected = Expected()
    pass1: list[list[tuple[int, int]]] = []
    pass2: list[list[tuple[int, int]]] = []
    for p in range(n_parts):
        n = draw(st.integers(0, 25))
        kinds = draw(st.lists(_KIND, min_size=n, max_size=n))
        # the log as written, in offset order: (sequence, fate)
        log: list[tuple[int, str]] = []
        for seq, kind in enumerate(kinds):
            assert ledger.next_seq(p) == seq
            if kind == "acked":
                log.append((seq, draw(st.sampled_from(_ACKED_FATES))))
            elif kind == "aborted":
                visible = draw(st.booleans())
                log.append((seq, "aborted-visible" if visible else "aborted-hidden"))
            elif kind in ("failed", "indeterminate", "pending"):
                if draw(st.booleans()):
                    log.append((seq, f"{kind}-present"))
                elif kind != "failed":
                    expected.add("indeterminate_absent")
                if kind == "failed":
                    ledger.failed(p, seq, "NOT_ENOUGH_REPLICAS")
                elif kind == "indeterminate":
                    ledger.indeterminate(p, seq, "_MSG_TIMED_OUT")
        # swap adjacent pairs of sends both marked "swap": a real reorder in the log
        i = 0
        while i + 1 < len(log):
            if log[i][1] == "swap" and log[i + 1][1] == "swap":
                log[i], log[i + 1] = (log[i + 1][0], "swapped"), (log[i][0], "swapped")
                expected.add("reordered")
                i += 2
            else:
                i += 1
        # offsets 0, 2, 4...: odd offsets are free for "misplace" to claim
        first: list[tuple[int, int]] = []
        second: list[tuple[int, int]] = []
        copies: list[int] = []
        for index, (seq, fate) in enumerate(log):
            offset = 2 * index
            base = fate.split("-")[0]
            if base in ("clean", "drop", "dup", "miss", "swap", "swapped", "aborted"):
                ledger.acked(p, seq, offset)
            elif fate == "misplace":
                ledger.acked(p, seq, offset + 1)  # the broker said one offset, wrote another
                expected.add("inconsistent_offsets")
            if base == "aborted":
                ledger.mark_aborted(p, [seq])
            if fate == "drop":
                expected.add("lost")
                continue
            if fate == "aborted-hidden":  # a read_committed reader skips it
                continue
            second.append((offset, seq))
            if fate == "miss":
                expected.add("consumer_missed")
                continue
            first.append((offset, seq))
            if fate == "dup":
                k = draw(st.integers(1, 3))
                copies.extend([seq] * k)
                expected.add("duplicated")
                expected.add("duplicate_copies", k)
            elif fate == "aborted-visible":
                expected.add("aborted_visible")
            elif fate == "failed-present":
                expected.add("failed_present")
            elif fate in ("indeterminate-present", "pending-present"):
                expected.add("indeterminate_present")
        # retried copies and another writer's messages land after everything else
        end = 2 * len(log)
        tail = [(end + 2 * j, seq) for j, seq in enumerate(copies)]
        strangers = draw(st.integers(0, 2))
        tail += [(end + 2 * (len(copies) + j), n + 100 + j) for j in range(strangers)]
        expected.add("unexpected", strangers)
        first += tail
        second += tail
        pass1.append(first)
        pass2.append(second)
    ledger.finish()
    return ledger, pass1, pass2, expected


def _run(ledger: Ledger, pass1: list[list[tuple[int, int]]],
         pass2: list[list[tuple[int, int]]]) -> Verification:
    verifier = Verifier(ledger, RUN)
    for pass_no, logs in ((1, pass1), (2, pass2)):
        # partitions interleaved, each in offset order, as a consumer delivers them
        cursors = [0] * len(logs)
        while any(c < len(log) for c, log in zip(cursors, logs, strict=True)):
            for p, log in enumerate(logs):
                for offset, seq in log[cursors[p]:cursors[p] + 3]:
                    verifier.observe(p, offset, ProbeRecord(RUN, seq, 0, 0), pass_no)
                cursors[p] += 3
        verifier.pass_done(pass_no)
    return verifier.result()


@settings(max_examples=200, deadline=None)
@given(runs())
def test_counts_equal_mutations(case: tuple[Ledger, list[list[tuple[int, int]]],
                                            list[list[tuple[int, int]]], Expected]) -> None:
    ledger, pass1, pass2, expected = case
    v = _run(ledger, pass1, pass2)
    got = {name: getattr(v, name) for name in expected.counts}
    assert got == expected.counts
    assert v.sent == ledger.sent
    for name in expected.counts:
        assert sum(getattr(s, name) for s in v.partitions) == got[name]
        if name != "duplicate_copies":
            assert len(v.samples[name]) == min(got[name], 10)


def test_memory_per_message_at_a_million() -> None:
    n, parts = 1_000_000, 4
    ledger = Ledger(parts)
    next_seq, acked = ledger.next_seq, ledger.acked
    for i in range(n):
        p = i % parts
        acked(p, next_seq(p), i // parts)
    ledger.finish()
    verifier = Verifier(ledger, RUN)
    observe = verifier.observe
    for i in range(n):
        p = i % parts
        observe(p, i // parts, ProbeRecord(RUN, i // parts, i, 0))
    verifier.pass_done(1)
    per_message = (ledger.nbytes() + verifier.nbytes()) / n
    assert per_message <= 16, per_message
    v = verifier.result()
    assert (v.sent, v.acked, v.lost, v.duplicated, v.reordered) == (n, n, 0, 0, 0)


def test_memory_per_message_with_acks_zero() -> None:
    # acks=0: no offsets are reported; observations must not pile up as anomalies
    n = 100_000
    ledger = Ledger(1)
    for _ in range(n):
        ledger.acked(0, ledger.next_seq(0), -1001)
    verifier = Verifier(ledger, RUN)
    for seq in range(n):
        verifier.observe(0, 10 + seq, ProbeRecord(RUN, seq, seq, 0))
    assert (ledger.nbytes() + verifier.nbytes()) / n <= 16
    v = verifier.result()
    assert (v.lost, v.inconsistent_offsets, v.duplicated) == (0, 0, 0)
