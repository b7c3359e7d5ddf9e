"""pytest fixtures for a real Kafka-compatible broker (registered via the `pytest11` entry point).

Fixtures:
- `minibroker`: the session's broker (a minibroker.testing.BrokerProcess, or an ExternalBroker when
  MINIBROKER_BOOTSTRAP_SERVERS names one). Started lazily by the first test that needs it, on a
  free port with a temporary data directory and the `test` profile; stopped at session end. Under
  pytest-xdist every worker is its own session, so each worker gets its own broker.
- `kafka_bootstrap_servers`: the `host:port` string for any Kafka client.
- `kafka_admin`: a kafka-python KafkaAdminClient connected to it (session scope).
- `kafka_topic`: a factory `kafka_topic(partitions=1, configs=None, prefix=None) -> name` creating
  a uniquely named topic for this test (deleted afterwards).

Options: `--minibroker-config FILE` (a Kafka .properties file), `--minibroker-log-level LEVEL`.
When a test that used the broker fails, the broker's log lines written during that test are
attached to its report (a "minibroker log" section).
"""

from __future__ import annotations

import os
import re
import time
import uuid

import pytest

from minibroker.testing import BrokerProcess

BOOTSTRAP_ENV = "MINIBROKER_BOOTSTRAP_SERVERS"
_BROKER_KEY = pytest.StashKey["BrokerProcess | ExternalBroker"]()
_LOG_OFFSET_KEY = pytest.StashKey[int]()
_REPORT_LOG_LINES = 200
_TOPIC_TIMEOUT_S = 10.0


class ExternalBroker:
    """A broker (or Kafka cluster) this session did not start: only its address is known."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def log_size(self) -> int:
        return 0

    def log_since(self, _offset: int) -> str:
        return ""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minibroker", "Kafka-compatible broker for tests")
    group.addoption(
        "--minibroker-config",
        metavar="FILE",
        help="Kafka .properties file for the session's broker (on top of the test profile)",
    )
    group.addoption(
        "--minibroker-log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the broker's log level (its log is attached to failing tests)",
    )


@pytest.fixture(scope="session")
def minibroker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The session's broker; see the module docstring."""
    external = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if external:
        handle = ExternalBroker(external)
        request.config.stash[_BROKER_KEY] = handle
        yield handle
        return
    config_file = request.config.getoption("--minibroker-config")
    extra = ["--config", os.path.abspath(config_file)] if config_file else []
    proc = BrokerProcess(
        tmp_path_factory.mktemp("minibroker"),
        profile="test",
        log_format="console",
        log_level=request.config.getoption("--minibroker-log-level"),
        extra_args=extra,
    )
    proc.start()
    request.config.stash[_BROKER_KEY] = proc
    try:
        yield proc
    finally:
        del request.config.stash[_BROKER_KEY]
        rc = proc.cleanup()
        if rc not in (None, 0):
            print(f"minibroker exited with code {rc} at session end\n{proc.log_tail()}")


@pytest.fixture(scope="session")
def kafka_bootstrap_servers(minibroker) -> str:
    return minibroker.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap_servers):
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(
        bootstrap_servers=kafka_bootstrap_servers,
        client_id="minibroker-pytest-admin",
        request_timeout_ms=int(_TOPIC_TIMEOUT_S * 1000),
    )
    yield admin
    admin.close()


def _topic_stem(name: str) -> str:
    # Kafka topic names allow [a-zA-Z0-9._-], at most 249 characters.
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", name).strip("-.")[:180] or "topic"


@pytest.fixture
def kafka_topic(request: pytest.FixtureRequest, kafka_admin):
    """Factory: `kafka_topic(partitions=1, configs=None, prefix=None)` creates a new uniquely
    named topic, waits until the broker reports it, and returns its name."""
    from kafka.admin import NewTopic

    created: list[str] = []

    def create(
        partitions: int = 1, configs: dict[str, object] | None = None, prefix: str | None = None
    ) -> str:
        name = f"{_topic_stem(prefix or request.node.name)}-{uuid.uuid4().hex[:10]}"
        topic_configs = {key: str(value) for key, value in (configs or {}).items()}
        kafka_admin.create_topics([NewTopic(name, partitions, 1, topic_configs=topic_configs)])
        created.append(name)
        _wait_for_topic(kafka_admin, name, partitions)
        return name

    yield create
    if created:
        try:
            kafka_admin.delete_topics(created)
        except Exception as exc:  # noqa: BLE001 - clean-up must not turn a pass into an error
            print(f"minibroker: could not delete test topics {created}: {exc}")


def _wait_for_topic(admin, name: str, partitions: int) -> None:
    deadline = time.monotonic() + _TOPIC_TIMEOUT_S
    while True:
        described = admin.describe_topics([name])
        if (
            described
            and described[0].get("error_code") == 0
            and len(described[0].get("partitions", [])) == partitions
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"topic {name} not visible with {partitions} partitions after {_TOPIC_TIMEOUT_S}s: "
                f"{described}"
            )
        time.sleep(0.02)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    handle = item.config.stash.get(_BROKER_KEY, None)
    if handle is None or "minibroker" not in getattr(item, "fixturenames", ()):
        return report
    if report.when == "setup":
        item.stash[_LOG_OFFSET_KEY] = handle.log_size()
    elif report.failed:
        text = handle.log_since(item.stash.get(_LOG_OFFSET_KEY, 0))
        lines = text.splitlines()[-_REPORT_LOG_LINES:]
        if lines:
            report.sections.append(("minibroker log", "\n".join(lines)))
    return report
