"""The README example checker itself (the real runs are compared in the integration tests)."""

from __future__ import annotations

from tests.guide_examples import Example, mismatches, normalise


def test_what_varies_between_runs_is_normalised() -> None:
    line = ("kaudit demo on the lab in /tmp/x (bootstrap 127.0.0.1:5,127.0.0.1:6), cluster "
            "2kCXDTYdRqaPbIsCm3ajtQ, run 0123456789ab: 20,903 of 30,000  lost")
    assert normalise(line, "/tmp/x") == ("kaudit demo on the lab in <state> (bootstrap "
                                         "<bootstrap>), cluster <id>, run <id>: N of N lost")
    assert normalise("cluster id   2kCXDTYdRqaPbIsCm3ajtQ", "/tmp/x") == "cluster id <id>"
    # A topic name is no id, however long.
    assert normalise("topic kaudit-demo-payments", "/tmp/x") == "topic kaudit-demo-payments"


def test_a_block_of_several_commands_is_cut_per_command() -> None:
    from tests.guide_examples import commands

    parts = commands(Example("$ kaudit lab status", ["a", "$ eval x", "$ kaudit cluster", "b"]))
    assert [(p.command, p.lines) for p in parts] == [
        ("$ kaudit lab status", ["a"]), ("$ eval x", []), ("$ kaudit cluster", ["b"])]


def test_lines_must_come_in_order_and_cut_passages_are_skipped() -> None:
    ex = Example("$ kaudit demo", ["kaudit demo: [1/6] lab", "a", "[... cut", "here ...]",
                                   "b"])
    assert mismatches(ex, "a\nx\nb\n", "kaudit demo: [2/6] lab\n", "/s", "kaudit demo:") == []
    assert mismatches(ex, "b\na\n", "kaudit demo: [1/6] lab\n", "/s", "kaudit demo:") == [
        "stdout lacks (in this order): b"]


def test_a_table_whose_columns_changed_is_told() -> None:
    table = ["+-----+------+", "| topic | loss |", "|       | tol  |", "+=====+======+",
             "| a   | 1    |", "+-----+------+"]
    ex = Example("$ kaudit check", table)
    real = "\n".join(["+---+---+", "| topic | survives |", "+===+===+", "| a | x |"])
    problems = mismatches(ex, real, "", "/s", "kaudit check:")
    assert len(problems) == 1 and "topic | loss tol" in problems[0]
    assert mismatches(ex, "\n".join(table), "", "/s", "kaudit check:") == []


def test_what_a_failover_did_by_chance_is_not_required() -> None:
    ex = Example("$ kaudit demo", ["acks=all: 0 of 30,000 acknowledged writes lost, 52 duplicated.",
                                   "Its duplicates and reorderings come from retries in the "
                                   "failover."])
    assert mismatches(ex, "acks=all: 0 of 30,000 acknowledged writes lost.\n", "", "/s",
                      "kaudit demo:") == []


def test_a_line_the_real_output_wrapped_elsewhere_still_matches() -> None:
    ex = Example("$ kaudit demo", ["kaudit check: live, cluster 2kCXDTYdRqaPbIsCm3ajtQ, policies: "
                                   "/tmp/helper-demo-lab/demo/policy.yaml"])
    real = ("kaudit check: live, cluster lWHqpvijSNK6yPAaGakPpA, policies: /tmp/kaudit-test-lab-\n"
            "  h8voepgl/demo/policy.yaml\n")
    assert mismatches(ex, real, "", "/tmp/kaudit-test-lab-h8voepgl", "kaudit demo:") == []
