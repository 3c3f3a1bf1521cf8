"""--timeout bounds the admin client's waits, proven on a clock the test moves itself.

The CLI tests run kaudit against a refused and a silent port and only guard against a hang;
how long those runs take depends on how loaded the machine is. Here the waits run on a fake
clock, so the budget arithmetic is checked exactly and the same on any machine.
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from types import SimpleNamespace
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException

import kaudit.cluster.client as client_module
import kaudit.cluster.leaders as leaders
import kaudit.waiting as waiting_module
from kaudit.cluster.client import AdminSession
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure

SLICE = 0.25  # the longest single wait AdminSession.outcome makes before looking again
POLL = 0.2  # AdminSession.unreachable serves pending callbacks this long before it explains


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class SilentFuture:
    """An admin request nobody answers: every wait on it runs out."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def result(self, timeout: float) -> Any:
        self.clock.now += timeout
        raise FutureTimeout()


class SilentAdmin:
    """An AdminClient whose cluster never answers; records what it was asked."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.asked: list[tuple[str, float]] = []

    def poll(self, timeout: float) -> int:
        self.clock.now += timeout
        return 0

    def describe_cluster(self, request_timeout: float) -> SilentFuture:
        self.asked.append(("describe_cluster", request_timeout))
        return SilentFuture(self.clock)

    def list_topics(self, timeout: float) -> Any:
        self.asked.append(("list_topics", timeout))
        self.clock.now += timeout
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))


@pytest.fixture
def silent(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeClock, SilentAdmin]:
    clock = FakeClock()
    # Only the client's clock and its deadlines': pytest's own timing stays real.
    monkeypatch.setattr(client_module, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(waiting_module, "time", SimpleNamespace(monotonic=clock.monotonic))
    return clock, SilentAdmin(clock)


def session_on(admin: SilentAdmin, timeout: float) -> AdminSession:
    session = AdminSession(ConnectionSettings("127.0.0.1:1", timeout=timeout))
    session.admin = cast(Any, admin)
    return session


@pytest.mark.parametrize("timeout", [0.3, 1, 3, 7.5, 30])
def test_an_unanswered_request_ends_at_its_bound(silent: tuple[FakeClock, SilentAdmin],
                                                  timeout: float) -> None:
    clock, admin = silent
    session = session_on(admin, timeout)
    with pytest.raises(ConnectionFailure, match=f"within {timeout:g}s"):
        session.wait(SilentFuture(clock))
    assert timeout <= clock.now <= timeout + SLICE + POLL


@pytest.mark.parametrize("timeout", [0.3, 1, 3, 7.5, 30])
def test_an_unreachable_cluster_is_given_up_within_the_timeout(
        silent: tuple[FakeClock, SilentAdmin], timeout: float) -> None:
    clock, admin = silent
    session = session_on(admin, timeout)
    with pytest.raises(ConnectionFailure, match=f"cannot reach Kafka at 127.0.0.1:1 within "
                                                f"{timeout:g}s"):
        session.describe_identity()
    # Asked more than once when the budget allows it (a just-crashed controller is retried
    # elsewhere), yet given up at the deadline, not a grace period after it.
    assert timeout <= clock.now <= timeout + SLICE + POLL
    if timeout > 3:
        assert [name for name, _ in admin.asked].count("describe_cluster") >= 2
    assert all(asked <= 3.0 for _, asked in admin.asked)


def test_a_fault_excuse_holds_the_wait_then_leaves_a_whole_timeout_after_it(
        silent: tuple[FakeClock, SilentAdmin]) -> None:
    clock, admin = silent
    session = session_on(admin, 5)
    healed_settled = 40.0  # the injected fault's excuse ends here
    session.excuse(lambda: healed_settled)
    deadline = client_module.Deadline(5)
    clock.now = 6.0  # past the read's own bound, the fault still in force: keep waiting
    assert not session.gives_up(deadline)
    # Once the excuse is over, the read still has a whole timeout to find the broker back.
    clock.now = 44.9
    assert not session.gives_up(deadline)
    clock.now = 45.0
    assert session.gives_up(deadline)


def test_kaudits_own_reads_try_a_lost_broker_again_within_a_second() -> None:
    collector = client_module.ErrorCollector()
    settings = ConnectionSettings("127.0.0.1:1")
    assert client_module.admin_config(settings, collector)["reconnect.backoff.max.ms"] == 1000
    assert "reconnect.backoff.max.ms" not in client_module.client_config(settings, collector)
    # A user's backoff, initial or maximum, is left as they set it (librdkafka refuses a
    # maximum below the initial one).
    for key in ("reconnect.backoff.ms", "reconnect.backoff.max.ms"):
        mine = ConnectionSettings("127.0.0.1:1", properties={key: "2000"})
        config = client_module.admin_config(mine, collector)
        assert config[key] == "2000" and len([k for k in config if "backoff" in k]) == 1
        assert AdminSession(mine).admin is not None  # librdkafka takes it


class LeaderlessUntilAskedAdmin:
    """librdkafka's ListOffsets as CI saw it: "No leaders found" for a topic whose leaders
    its metadata cache does not hold, until its metadata is asked for."""

    def __init__(self) -> None:
        self.known: set[str] = set()
        self.asked: list[str] = []

    def list_topics(self, topic: str, timeout: float) -> None:
        self.asked.append(topic)
        self.known.add(topic)

    def list_offsets(self, wanted: dict[Any, Any], **_: Any) -> dict[Any, Any]:
        from concurrent.futures import Future

        answers = {}
        for tp in wanted:
            future: Future[Any] = Future()
            if tp.topic in self.known:
                future.set_result(SimpleNamespace(offset=42))
            else:
                future.set_exception(KafkaException(KafkaError(
                    KafkaError.LEADER_NOT_AVAILABLE,
                    "Failed to query partition leaders: No leaders found")))
            answers[tp] = future
        return answers


def test_offsets_without_leaders_in_the_clients_cache_ask_for_metadata_again() -> None:
    admin = LeaderlessUntilAskedAdmin()
    session = AdminSession(ConnectionSettings("127.0.0.1:1", timeout=10))
    session.admin = cast(Any, admin)
    assert session.list_offsets("orders", [0, 1], "latest") == {0: 42, 1: 42}
    assert admin.asked == ["orders"]  # once, for both partitions


def test_a_brokers_own_error_is_the_reason_given_not_an_older_transport_error() -> None:
    # A leader killed earlier left "Connection refused" behind; the read then failed on the
    # broker's FENCED_LEADER_EPOCH, which is what the one line must say.
    from confluent_kafka import KafkaError, KafkaException

    from kaudit.cluster.client import ErrorCollector, unreachable
    from kaudit.connection.settings import ConnectionSettings

    collector = ErrorCollector()
    collector(KafkaError(KafkaError._TRANSPORT, "127.0.0.1:9/2: Connection refused"))
    fenced = KafkaException(KafkaError(KafkaError.FENCED_LEADER_EPOCH))
    settings = ConnectionSettings("127.0.0.1:9", timeout=10)
    message = str(unreachable(settings, collector, fenced))
    assert "Leader epoch is older than broker epoch" in message, message
    assert "Connection refused" not in message
    # A local error (librdkafka's own, a negative code) leaves the transport error first.
    timed_out = KafkaException(KafkaError(KafkaError._TIMED_OUT))
    assert "Connection refused" in str(unreachable(settings, collector, timed_out))


def _metadata(topic: str, leaders: dict[int, int], brokers: dict[int, int]) -> Any:
    """A ClusterMetadata-shaped answer: each partition's leader, each broker's port."""
    return SimpleNamespace(
        topics={topic: SimpleNamespace(partitions={
            p: SimpleNamespace(leader=leader) for p, leader in leaders.items()})},
        brokers={b: SimpleNamespace(id=b, host="127.0.0.1", port=port)
                 for b, port in brokers.items()})


@pytest.fixture()
def ports() -> Any:
    """A port that listens and one that refuses connections (bound, then closed)."""
    import socket

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    refused = closed.getsockname()[1]
    closed.close()
    yield listening.getsockname()[1], refused
    listening.close()


def test_only_partitions_whose_leader_refuses_connections_are_held_back(ports: Any) -> None:
    up, down = ports
    metadata = {"orders": _metadata("orders", {0: 1, 1: 2, 2: -1}, {1: up, 2: down})}
    held = leaders.refusing_leaders(
        metadata, [("orders", 0), ("orders", 1), ("orders", 2), ("other", 0)])
    # Partition 2 has no leader (librdkafka says so at once); "other" has no metadata yet.
    assert held == {("orders", 1): f"the leader of orders[1], broker 2 at 127.0.0.1:{down}, "
                                   "refuses connections"}


class DeadLeaderAdmin:
    """A leader killed and not yet fenced: ListOffsets to it times out (librdkafka spins on
    its reconnects meanwhile), until the metadata names a live leader."""

    def __init__(self, up: int, down: int) -> None:
        self.up, self.down = up, down
        self.timeouts: list[float] = []
        self.metadata_asked = 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        self.metadata_asked += 1
        leader = 2 if self.metadata_asked < 3 else 1  # fenced at the third ask: broker 1 leads
        return _metadata(topic, {0: leader}, {1: self.up, 2: self.down})

    def list_offsets(self, wanted: dict[Any, Any], request_timeout: float,
                     **_: Any) -> dict[Any, Any]:
        from concurrent.futures import Future

        self.timeouts.append(request_timeout)
        answers = {}
        for tp in wanted:
            future: Future[Any] = Future()
            if self.metadata_asked >= 3:
                future.set_result(SimpleNamespace(offset=42))
            else:
                future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
            answers[tp] = future
        return answers


def test_a_dead_leader_is_asked_once_briefly_then_not_until_the_metadata_moves_on(
        ports: Any) -> None:
    admin = DeadLeaderAdmin(*ports)
    session = AdminSession(ConnectionSettings("127.0.0.1:1", timeout=10))
    session.admin = cast(Any, admin)
    assert session.list_offsets("orders", [0], "latest") == {0: 42}
    # The first try, short; none while broker 2 refused; one more once broker 1 led.
    assert admin.timeouts == [leaders.FIRST_ATTEMPT_S, 2 * leaders.FIRST_ATTEMPT_S]
    assert admin.metadata_asked == 3
