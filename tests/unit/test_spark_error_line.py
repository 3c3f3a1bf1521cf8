"""The one line kept of a Spark or Py4J error (kaudit.reconcile.spark.error_line)."""

from __future__ import annotations

from kaudit.reconcile.spark import error_line

# What str() of a Py4JJavaError looks like: Py4J's line, then the Java exception and trace.
PY4J = ("An error occurred while calling o59.load.\n"
        ": org.postgresql.util.PSQLException: Connection to 127.0.0.1:1 refused.\n"
        "\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(...)\n")


def test_a_py4j_error_is_told_by_its_java_exception() -> None:
    # It was "An error occurred while calling o59.load.", which says nothing of why.
    assert error_line(Exception(PY4J)) == ("org.postgresql.util.PSQLException: Connection to "
                                           "127.0.0.1:1 refused.")


def test_a_spark_error_keeps_its_first_line_within_the_limit() -> None:
    text = "\n  [PATH_NOT_FOUND] Path does not exist: file:/x. SQLSTATE: 42K03\n== SQL ==\n"
    assert error_line(Exception(text)) == ("[PATH_NOT_FOUND] Path does not exist: file:/x. "
                                           "SQLSTATE: 42K03")
    assert error_line(Exception("x" * 500), 20) == "x" * 20
    assert error_line(Exception("An error occurred while calling o1.x.")) == (
        "An error occurred while calling o1.x.")  # nothing after it: kept as it is
