"""The verdict in a sentence, and what each reason for it means and what to do.

A page opens with one sentence a reader takes in at a glance: the verdict's reason, in
counts and, where the run's events explain it, the faults and the leader change around it
("4,657 of 20,000 acknowledged writes lost: ... gone when broker 3 became leader of
partition 0 at 14.1 s"). Each sentence is a pure function of the report's JSON document,
so what it says is what the record says: where the events do not explain a loss, the
sentence says "cause unknown" rather than guess.

:data:`EXPLANATIONS` holds, in one place, what every reason a probe run can fail for means
and what an operator can do about it, keyed by the start of the reason's text
(:meth:`kaudit.probe.model.ProbeReport.violations`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Document = Mapping[str, Any]

FAULTS_NAMED = 2
"""A loss is explained by at most this many faults, the last before it (a bounce-leader:5
run has five): earlier ones are counted, not quoted."""


@dataclass(frozen=True)
class Explanation:
    """What a reason for a verdict means, and what to do about it."""

    means: str
    to_do: str
    short: str | None = None
    """The verdict sentence's words for it, where the reason's own are too terse."""


_KEEP_WRITES = ("Acknowledged writes survive one broker's failure with acks=all, "
                "min.insync.replicas=2 of 3 replicas and unclean.leader.election.enable="
                "false: check the producer and the topic for these (kaudit check audits "
                "them).")

EXPLANATIONS: dict[str, Explanation] = {
    "inconclusive:": Explanation(
        "The producer got no acknowledgement for any write, so nothing could be checked: "
        "the run shows neither that writes survive nor that they are lost.",
        "Read the send errors below: a permanent one names the setting to change. "
        "Otherwise check that the brokers are reachable from here and that the topic "
        "takes writes, then run again."),
    "lost:": Explanation(
        "The producer was told these writes were stored, yet reading every partition "
        "back past their acknowledged offsets did not find them: the log that "
        "acknowledged them no longer holds them. Typically a leader acknowledged them "
        "before its followers had copied them, and a follower without them became leader.",
        _KEEP_WRITES + " The timeline and the events below place the loss among the "
        "faults and leader changes."),
    "duplicated:": Explanation(
        "A write was stored at more than one offset: the producer sent it again after "
        "the broker had appended it but its answer was lost.",
        "Enable idempotence (--idempotence, enable.idempotence=true) with at most 5 "
        "requests in flight; across producer restarts only a transactional id prevents "
        "duplicates, otherwise consumers must tolerate them."),
    "aborted_visible:": Explanation(
        "Records of transactions the producer aborted were read back by a "
        "read_committed reader, which Kafka promises never happens.",
        "Check that your consumers use isolation.level=read_committed (kaudit's "
        "read-back does for --transactional runs); if they do, report it to the "
        "brokers' maintainers with the broker version and this run's --format json."),
    "inconsistent_offsets:": Explanation(
        "The offset a broker returned with an acknowledgement now holds another "
        "message: the partition was truncated after the acknowledgement and that offset "
        "written again, typically by a new leader that lacked the write.",
        _KEEP_WRITES + " The brokers' logs show the truncation (lines with "
        "'Truncating') at the time of the leader change."),
    "could not read every partition back": Explanation(
        "Some partitions ended before offsets the producer had acknowledged, or went "
        "silent while being read, so the writes past that point could not be checked: "
        "they may be lost, or only unread.",
        "Run again with a longer --timeout (the read-back waits that long for a silent "
        "partition). If a partition still ends short, check the brokers' logs for its "
        "truncation (lines with 'Truncating') around the run's leader changes: a log "
        "that ends before an acknowledged offset has lost those writes.",
        short="some acknowledged writes could not be checked: reading back stopped "
              "before the last acknowledged offset of a partition"),
    "read_then_lost:": Explanation(
        "A reader was shown these writes while the run wrote, and they were lost "
        "afterwards. Readers see only what every in-sync replica holds (below the high "
        "watermark), so this takes an unclean leader election or a broker bug.",
        "Check unclean.leader.election.enable on the topic and the brokers; if it is "
        "false, report it to the brokers' maintainers with the broker version and this "
        "run's --format json."),
    "unavailable:": Explanation(
        "For longer than --max-unavailable allows, the cluster refused or did not "
        "answer writes: producers could not write in those seconds.",
        "The shaded windows of the timeline and the events below show when. Look at "
        "how long the leader election took (the controller's log; the producer's "
        "request.timeout.ms), or raise --max-unavailable if such a pause is acceptable."),
}
"""Every reason :meth:`~kaudit.probe.model.ProbeReport.violations` gives, by the start of
its text: what it means and what to do."""

LOST_DELETED = Explanation(
    "These writes were acknowledged and stored, then removed from the log before a reader "
    "got to them: the partition's log start offset moved above their offsets, by "
    "retention (retention.ms, retention.bytes) or by a DeleteRecords call.",
    "Readers must keep up within retention: raise the topic's retention, alert on "
    "consumer lag before it nears it, and find who deletes records (kafka-delete-records, "
    "an admin tool; the brokers' request log names the client).")
"""A loss whose every record was deleted (its verdict line names no other cause)."""

UNVERIFIED = Explanation(
    "Acknowledged records the reader had not reached when the run ended: not lost, not "
    "checked either.",
    "Give the run more time to read back (a longer drain, or --duration), and look at "
    "why the reader lagged: consumer lag, a stalled partition, a fault still in force.")

PERMANENT = Explanation(
    "The brokers refused these writes for a reason no retry fixes; the words after "
    "'permanent,' name the setting at fault.",
    "Change that setting (the producer's, the topic's or the principal's ACLs) and run "
    "again.")
"""A send error that no retry fixes (``NAME xN: permanent, ...``): its name varies."""


def explain(reason: str) -> Explanation | None:
    """What ``reason`` (a line of a report's ``violations``) means and what to do."""
    if reason.startswith("lost:") and "deleted" in reason \
            and "truncated" not in reason and "unknown" not in reason:
        return LOST_DELETED  # the usual "leader without them" story would mislead here
    if reason.startswith("unverified:"):
        return UNVERIFIED
    for start, explanation in EXPLANATIONS.items():
        if reason.startswith(start):
            return explanation
    return PERMANENT if ": permanent, " in reason else None


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _words(reason: str) -> str:
    """A reason in the sentence's words: its own, less a ``class:`` label in front."""
    found = explain(reason)
    if found is not None and found.short:
        return found.short
    label, sep, rest = reason.partition(": ")
    return rest if sep and " " not in label else reason


def probe_sentence(doc: Document) -> str:
    """Why a probe run got its verdict, in one sentence (see the module docstring)."""
    verdict = doc.get("verdict")
    reasons = list(doc.get("violations") or [])
    if verdict == "inconclusive":
        text, rest = _inconclusive(doc), reasons[1:]
    elif verdict == "pass" or not reasons:
        text, rest = _passed(doc), []
    elif any(r.startswith("lost:") for r in reasons) and doc.get("lost"):
        text, rest = _lost(doc), [r for r in reasons if not r.startswith("lost:")]
    else:
        text, rest = _words(reasons[0]), reasons[1:]
    if rest:
        text += f" ({len(rest)} more reason{'' if len(rest) == 1 else 's'} below)"
    text = _sentence(text)
    if doc.get("interrupted"):
        text += " The run was interrupted: it judges only what was sent before."
    return text


def _inconclusive(doc: Document) -> str:
    sent = int(doc.get("sent") or 0)
    text = (f"none of the {_plural(sent, 'write')} was acknowledged" if sent
            else "nothing was sent") + ", so the run shows nothing about delivery"
    errors = {k: v for k, v in (doc.get("send_errors") or {}).items() if v}
    if errors:
        top = sorted(errors.items(), key=lambda kv: -kv[1])[:2]
        text += "; the producer's errors: " + ", ".join(f"{k} x{n:,}" for k, n in top)
    return text


def _passed(doc: Document) -> str:
    acked, lost = int(doc.get("acked") or 0), int(doc.get("lost") or 0)
    settings = doc.get("settings") or {}
    expect = settings.get("expect")
    allowed = f"--expect {expect} allows" if expect else "a run with no --expect allows"
    if lost:
        text = f"{lost:,} of {acked:,} acknowledged writes lost, which {allowed}"
    elif acked == 1:
        text = "the one acknowledged write was read back"
    else:
        text = f"all {acked:,} acknowledged writes were read back"
    faults = settings.get("faults") or []
    if faults:
        at = f" at {settings['fault_at']}" if settings.get("fault_at") else ""
        text += f" through the fault {', '.join(faults)}{at}"
    duplicated = int(doc.get("duplicated") or 0)
    if duplicated:
        text += f"; {duplicated:,} stored more than once, which {allowed}"
    unavailable = (doc.get("availability") or {}).get("unavailable_seconds") or 0
    if unavailable:
        text += f"; writes went unanswered for {unavailable:g} s"
    return text


def _lost(doc: Document) -> str:
    text = f"{int(doc['lost']):,} of {int(doc.get('acked') or 0):,} acknowledged writes lost"
    clauses = []
    acks = str((doc.get("settings") or {}).get("acks"))
    if acks == "1":
        clauses.append("acknowledged by the leader alone (acks=1)")
    elif acks == "0":
        clauses.append("counted as acknowledged without any broker's answer (acks=0)")
    window = loss_window(doc)
    if window:
        clauses.append(f"sent between {window[0]} s and {window[1]} s")
    faults, earlier, change = loss_cause(doc, window)
    if faults:
        named = " and ".join(f"'{e['detail']}' at {_s(e['at_s'])}" for e in faults)
        more = f" (after {_plural(earlier, 'earlier fault')})" if earlier else ""
        clauses.append(f"after {named}{more}")
    if faults and change:
        end = f"gone when {_became_leader(change)}"
    elif faults:
        end = "no leader change followed them, so the cause is unknown"
    else:
        end = ("cause unknown: no fault was injected before them"
               + (f", though {_became_leader(change)}" if change else ""))
    return f"{text}: {', '.join(clauses)}; {end}" if clauses else f"{text}, {end}"


def _s(seconds: Any) -> str:
    return f"{float(seconds):.1f} s"


_LEADER = re.compile(r"leader (-?\d+) -> (-?\d+)")


def _new_leader(event: Mapping[str, Any]) -> int | None:
    """The broker a leader-change event names as the new leader (None: no leader)."""
    found = _LEADER.search(str(event.get("detail") or ""))
    return int(found.group(2)) if found and int(found.group(2)) >= 0 else None


def _became_leader(event: Mapping[str, Any]) -> str:
    where = f" of partition {event['partition']}" if event.get("partition") is not None else ""
    return f"broker {_new_leader(event)} became leader{where} at {_s(event['at_s'])}"


def loss_window(doc: Document) -> tuple[int, int] | None:
    """The seconds the lost writes were sent in, as (first, end); None when the record
    does not place them."""
    seconds = [int(s["second"]) for s in doc.get("timeline") or () if s.get("lost")]
    return (min(seconds), max(seconds) + 1) if seconds else None


def loss_cause(doc: Document, window: tuple[int, int] | None
               ) -> tuple[list[Mapping[str, Any]], int, Mapping[str, Any] | None]:
    """What the events say about a loss: the last faults before it (and how many earlier
    ones), and the first change to a new leader, of a partition that lost writes, after
    the lost writes were sent (or, unplaced, after the first fault)."""
    events: Sequence[Mapping[str, Any]] = doc.get("events") or ()
    faults = [e for e in events if e.get("kind") == "fault"]
    losing = {p.get("partition") for p in doc.get("partitions") or () if p.get("lost")}
    start = window[0] if window else (faults[0]["at_s"] if faults else 0)
    changes = [e for e in events if e.get("kind") == "leader-change"
               and _new_leader(e) is not None and float(e["at_s"]) >= start
               and (not losing or e.get("partition") is None or e.get("partition") in losing)]
    change = changes[0] if changes else None
    # The faults that can have caused it happened before the new leader took over, or,
    # without one, before the last lost write was sent.
    cutoff = (float(change["at_s"]) if change
              else float(window[1]) if window else float("inf"))
    before = [e for e in faults if float(e["at_s"]) <= cutoff]
    return before[-FAULTS_NAMED:], max(len(before) - FAULTS_NAMED, 0), change


def matrix_sentence(doc: Document) -> str:
    """Which configurations of a probe matrix failed, and what they lost."""
    rows = list(doc.get("rows") or ())
    runs = [run for row in rows for run in row.get("runs") or ()]
    failing = [row for row in rows if any(r.get("verdict") != "pass" for r in row["runs"])]
    if not failing:
        lossy = [row for row in rows if row.get("duplicated")]
        text = ("the only run kept every acknowledged write" if len(runs) == 1 else
                f"all {_plural(len(runs), 'run')} of {_plural(len(rows), 'configuration')} "
                "kept every acknowledged write")
        if lossy:
            text += "; " + "; ".join(f"{configuration(row)} stored {row['duplicated']:,} "
                                     "more than once" for row in lossy[:2])
        return _sentence(text)
    bad = sum(r.get("verdict") != "pass" for row in failing for r in row["runs"])
    shown = [_failed_row(row) for row in failing[:2]]
    more = len(failing) - len(shown)
    return _sentence(f"{bad:,} of {_plural(len(runs), 'run')} failed, in {len(failing)} of "
                     f"{_plural(len(rows), 'configuration')}: " + "; ".join(shown)
                     + (f"; and {more} more (see the table)" if more else ""))


def configuration(row: Mapping[str, Any]) -> str:
    """A matrix row's settings, as the progress lines name them."""
    return (f"acks={row.get('acks')} idempotence={'on' if row.get('idempotence') else 'off'} "
            f"min.isr={row.get('min_insync_replicas')} "
            f"unclean={'on' if row.get('unclean_leader_election') else 'off'} "
            f"fault={row.get('fault') or 'none'}")


def _failed_row(row: Mapping[str, Any]) -> str:
    runs = row["runs"]
    failed = [r for r in runs if r.get("verdict") != "pass"]
    head = f"{configuration(row)} failed {len(failed)} of {_plural(len(runs), 'run')}"
    if row.get("lost"):
        return f"{head}, losing {row['lost']:,} of {row.get('acked', 0):,} acknowledged writes"
    if all(r.get("verdict") == "inconclusive" for r in failed):
        return f"{head}, none of whose writes was acknowledged (inconclusive)"
    return f"{head} with no write lost (see their reasons below)"


_NOT_MADE = re.compile(r"^run .* (not made|inconclusive)")


def unjudged_claim(row: Mapping[str, Any]) -> bool:
    """Whether a proof's row was not confirmed for want of a conclusive run (rather than
    contradicted by one)."""
    return (row.get("verdict") != "CONFIRMED"
            and bool(_NOT_MADE.match(str(row.get("observed") or ""))))


def prove_sentence(doc: Document) -> str:
    """How many claims a proof confirmed, and why the others were not."""
    rows = list(doc.get("rows") or ())
    confirmed = [r for r in rows if r.get("verdict") == "CONFIRMED"]
    seconds = f" in {float(doc.get('seconds') or 0):.0f} s"
    if rows and len(confirmed) == len(rows):
        return _sentence(f"all {_plural(len(rows), 'claim')} held{seconds}")
    text = f"{len(confirmed)} of {_plural(len(rows), 'claim')} confirmed{seconds}"
    others = [r for r in rows if r.get("verdict") != "CONFIRMED"]
    unjudged = [r for r in others if unjudged_claim(r)]
    refuted = [r for r in others if r not in unjudged]
    parts = [f"'{r['claim']}' did not hold: expected {r['expected']}, observed "
             f"{r['observed']}" for r in refuted[:2]]
    if len(refuted) > 2:
        parts.append(f"{len(refuted) - 2} more did not hold")
    if unjudged:
        parts.append(f"{len(unjudged)} could not be judged, their run not made or "
                     "inconclusive")
    return _sentence(text + ("; " + "; ".join(parts) if parts else ""))
