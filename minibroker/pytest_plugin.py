"""pytest fixtures for a real Kafka-compatible broker (registered via the `pytest11` entry point).

Fixtures:
- `minibroker`: the session's broker (a minibroker.testing.BrokerProcess, or an ExternalBroker when
  MINIBROKER_BOOTSTRAP_SERVERS names one). Started lazily by the first test that needs it, on a
  free port with a temporary data directory and the `test` profile; stopped at session end. Under
  pytest-xdist every worker is its own session, so each worker gets its own broker.
- `kafka_bootstrap_servers`: the `host:port` string for any Kafka client.
- `kafka_admin`: a kafka-python KafkaAdminClient connected to it (session scope).
- `kafka_topic`: a factory `kafka_topic(partitions=1, configs=None, prefix=None) -> name` creating
  a uniquely named topic for this test (deleted afterwards). A refusal raises TopicCreationError
  leading with the broker's own message.

kafka-python is imported only when `kafka_admin` or `kafka_topic` is used, with its import-time
DeprecationWarnings (about 200 on Python 3.11/3.12: `importlib.resources.read_text`) silenced: a
suite using confluent-kafka or aiokafka with `kafka_bootstrap_servers` never loads it.

Options: `--minibroker-config FILE` (a Kafka .properties file), `--minibroker-log-level LEVEL`.
When a test that used the broker fails, the broker's log lines written during that test are
attached to its report (a "minibroker log" section).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
import uuid
import warnings
from collections.abc import Callable, Generator, Iterator
from types import ModuleType
from typing import Any

import pytest

from minibroker.testing import BrokerProcess

BOOTSTRAP_ENV = "MINIBROKER_BOOTSTRAP_SERVERS"
_CONNECT_TIMEOUT_S = 3.0
# kafka-python (3.0.x, on Python < 3.13) builds its protocol classes at import time with the
# deprecated importlib.resources.read_text: two DeprecationWarnings per class, about 200 in all,
# attributed to kafka-python's module and to importlib's legacy wrapper it calls (message, module).
_KAFKA_IMPORT_WARNINGS = (
    ("read_text is deprecated", r"kafka\.protocol\.schemas\.load_json"),
    ("open_text is deprecated", r"importlib\.resources\._legacy"),
)
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


class TopicCreationError(RuntimeError):
    """The broker refused a `kafka_topic(...)` creation; the message is the broker's."""


def _kafka_admin_module() -> ModuleType:
    """kafka.admin, imported only by the fixtures that need kafka-python."""
    with _kafka_import_warnings_ignored():
        import kafka.admin  # noqa: PLC0415 - only for the fixtures that need kafka-python

    return kafka.admin


@contextlib.contextmanager
def _kafka_import_warnings_ignored() -> Iterator[None]:
    """Inside pytest's own warning capture (its hook wrappers are outermost), so these two filters
    win over the ini's and the command line's, `-W error::DeprecationWarning` included: the
    warnings are kafka-python's use of the standard library, whoever imports it (a fixture here or
    the user's own test module at collection). Every other DeprecationWarning is left alone."""
    with warnings.catch_warnings():
        for message, module in _KAFKA_IMPORT_WARNINGS:
            warnings.filterwarnings("ignore", message, DeprecationWarning, module)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    with _kafka_import_warnings_ignored():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    with _kafka_import_warnings_ignored():
        return (yield)


def _check_reachable(bootstrap_servers: str) -> None:
    """Fail fast, naming the variable, when no address of MINIBROKER_BOOTSTRAP_SERVERS accepts
    a TCP connection (a client would otherwise retry for its whole request timeout)."""
    errors = []
    for address in filter(None, (a.strip() for a in bootstrap_servers.split(","))):
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            pytest.fail(
                f"{BOOTSTRAP_ENV}={bootstrap_servers!r}: {address!r} is not host:port "
                f"(unset {BOOTSTRAP_ENV} to let the plugin start its own broker)",
                pytrace=False,
            )
        try:
            socket.create_connection((host.strip("[]"), int(port)), _CONNECT_TIMEOUT_S).close()
            return
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
    pytest.fail(
        f"{BOOTSTRAP_ENV}={bootstrap_servers!r}: no broker accepts connections there "
        f"({'; '.join(errors) or 'no address'}). Start that broker, fix the variable, or unset "
        f"{BOOTSTRAP_ENV} to let the plugin start its own broker.",
        pytrace=False,
    )


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
def minibroker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess | ExternalBroker]:
    """The session's broker; see the module docstring."""
    external = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if external:
        _check_reachable(external)
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
def kafka_bootstrap_servers(minibroker: BrokerProcess | ExternalBroker) -> str:
    return minibroker.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap_servers: str) -> Iterator[Any]:  # kafka-python has no types
    admin = _kafka_admin_module().KafkaAdminClient(
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
def kafka_topic(request: pytest.FixtureRequest, kafka_admin: Any) -> Iterator[Callable[..., str]]:
    """Factory: `kafka_topic(partitions=1, configs=None, prefix=None)` creates a new uniquely
    named topic, waits until the broker reports it, and returns its name."""
    new_topic = _kafka_admin_module().NewTopic
    from kafka.errors import KafkaError  # noqa: PLC0415 - imported above with kafka.admin

    created: list[str] = []

    def create(
        partitions: int = 1, configs: dict[str, object] | None = None, prefix: str | None = None
    ) -> str:
        name = f"{_topic_stem(prefix or request.node.name)}-{uuid.uuid4().hex[:10]}"
        topic_configs = {key: str(value) for key, value in (configs or {}).items()}
        try:
            kafka_admin.create_topics([new_topic(name, partitions, 1, topic_configs=topic_configs)])
        except KafkaError as exc:
            raise TopicCreationError(_refusal(name, exc)) from None
        created.append(name)
        _wait_for_topic(kafka_admin, name, partitions)
        return name

    yield create
    if created:
        try:
            kafka_admin.delete_topics(created)
        except Exception as exc:  # noqa: BLE001 - clean-up must not turn a pass into an error
            print(f"minibroker: could not delete test topics {created}: {exc}")


def _refusal(name: str, exc: Exception) -> str:
    """`kafka_topic`: the broker refused topic NAME: <its error_message> (<ERROR>, code N), not
    kafka-python's repr of the whole request and response."""
    text = str(exc)
    found = re.search(r"""error_message=(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""", text)
    broker_message = next((g for g in found.groups() if g), None) if found else None
    code = getattr(exc, "errno", None)
    kind = getattr(exc, "message", None) or type(exc).__name__
    what = f"{kind}, code {code}" if code is not None else kind
    if broker_message:
        return f"kafka_topic: the broker refused topic {name}: {broker_message} ({what})"
    return f"kafka_topic: could not create topic {name}: {what}: {text[:300]}"


def _wait_for_topic(admin: Any, name: str, partitions: int) -> None:
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
            state = described[0] if described else {}
            raise TimeoutError(
                f"kafka_topic: topic {name} not visible with {partitions} partitions after "
                f"{_TOPIC_TIMEOUT_S}s (error_code {state.get('error_code')}, "
                f"{len(state.get('partitions', []))} partitions)"
            )
        time.sleep(0.02)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
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
