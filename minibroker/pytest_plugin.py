"""pytest fixtures for a real Kafka-compatible broker (registered via the `pytest11` entry point;
docs/control-plane/pytest.md).

Fixtures:
- `minibroker`: the session's broker (a minibroker.testing.BrokerProcess, or an ExternalBroker when
  MINIBROKER_BOOTSTRAP_SERVERS names one). Started lazily by the first test that needs it, on a
  free port with a temporary data directory, the `test` profile and the test control plane on;
  stopped at session end. Under pytest-xdist every worker is its own session, so each worker gets
  its own broker.
- `kafka_bootstrap_servers`: the `host:port` string for any Kafka client.
- `kafka_admin`: a kafka-python KafkaAdminClient connected to it (session scope).
- `kafka_topic`: a factory `kafka_topic(partitions=1, configs=None, prefix=None) -> name` creating
  a uniquely named topic for this test (deleted afterwards). A refusal raises TopicCreationError
  leading with the broker's own message.
- `minibroker_control` (the broker's minibroker.control.ControlClient), `minibroker_faults`,
  `minibroker_clock`, `minibroker_state` (its parts): after every test that used one of them the
  broker's faults and observers are removed and its crash points disarmed (`POST /v1/reset`).
- Client factories, each closing what it made after the test: `kafka_producer(**config)` and
  `kafka_consumer(*topics, **config)` (kafka-python), `confluent_producer(config, **props)` and
  `confluent_consumer(config, **props)` (confluent-kafka), and async `aiokafka_producer(**config)`
  and `aiokafka_consumer(*topics, **config)` (aiokafka, with pytest-asyncio).
- `@pytest.mark.minibroker(**properties)`: the test gets a fresh broker of its own with these
  settings (the arguments of minibroker.pytest_factories.start_broker: Kafka properties with dots
  as underscores, `clock=`, `config=`...); `minibroker`, `kafka_bootstrap_servers`, `kafka_admin`
  and every fixture built on them refer to it for that test.
More brokers: minibroker.pytest_factories (`minibroker_proc`, `minibroker_noproc`).

Each client library is imported only when one of its fixtures is used. kafka-python's
import-time DeprecationWarnings (about 200 on Python 3.11/3.12: `importlib.resources.read_text`)
are silenced: a suite using confluent-kafka or aiokafka never loads kafka-python.

Options (each also an ini option, named without the dashes, `minibroker_log_level = debug`; the
command line wins): `--minibroker-config FILE` (a Kafka .properties file), `--minibroker-log-level
LEVEL`, `--minibroker-set KEY=VALUE` (repeatable), `--minibroker-clock system|manual|offset`,
`--minibroker-control HOST:PORT` and `--minibroker-control-token TOKEN` (an external broker's
control plane; also MINIBROKER_CONTROL / MINIBROKER_CONTROL_TOKEN).
When a test that used the broker fails, the broker's log lines written during that test are
attached to its report (a "minibroker log" section).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import re
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from minibroker.pytest_factories import (
    BOOTSTRAP_ENV,
    ExternalBroker,
    check_reachable,
    control_address,
    control_token,
    option,
    start_broker,
    stop_broker,
)
from minibroker.testing import BrokerProcess

if TYPE_CHECKING:
    from minibroker.control import ControlClient
    from minibroker.control.clock import ClockAPI
    from minibroker.control.faults import FaultsAPI
    from minibroker.control.state import StateAPI

__all__ = ["BOOTSTRAP_ENV", "ExternalBroker", "TopicCreationError"]

# kafka-python (3.0.x, on Python < 3.13) builds its protocol classes at import time with the
# deprecated importlib.resources.read_text: two DeprecationWarnings per class, about 200 in all,
# attributed to kafka-python's module and to importlib's legacy wrapper it calls (message, module).
_KAFKA_IMPORT_WARNINGS = (
    ("read_text is deprecated", r"kafka\.protocol\.schemas\.load_json"),
    ("open_text is deprecated", r"importlib\.resources\._legacy"),
)
_BROKER_KEY = pytest.StashKey["BrokerProcess | ExternalBroker"]()
_TEST_BROKER_KEY = pytest.StashKey[BrokerProcess]()  # a @pytest.mark.minibroker test's own
_LOG_OFFSET_KEY = pytest.StashKey[int]()
_REPORT_LOG_LINES = 200
_TOPIC_TIMEOUT_S = 10.0
_CLOSE_TIMEOUT_S = 5.0
_MARKER_DOC = (
    "minibroker(config=None, *, clock=None, control=True, token=None, profile='test', "
    "config_file=None, log_level=None, **properties): the test gets a fresh broker of its own "
    "(minibroker, kafka_bootstrap_servers, kafka_admin and the fixtures using them refer to it)"
)


class TopicCreationError(RuntimeError):
    """The broker refused a `kafka_topic(...)` creation; the message is the broker's."""


# ------------------------------------------------------------------ kafka-python's import warnings
def _kafka_module(name: str = "kafka") -> ModuleType:
    """A kafka-python module, imported only by the fixtures that need kafka-python."""
    import importlib  # noqa: PLC0415

    with _kafka_import_warnings_ignored():
        return importlib.import_module(name)


def _kafka_admin_module() -> ModuleType:
    return _kafka_module("kafka.admin")


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


# ------------------------------------------------------------------ options and the marker
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minibroker", "Kafka-compatible broker for tests")
    options: list[tuple[str, dict[str, Any], str, str | None]] = [
        (
            "--minibroker-config",
            {"metavar": "FILE"},
            "Kafka .properties file for the session's broker (on top of the test profile)",
            "string",
        ),
        (
            "--minibroker-log-level",
            {"choices": ["debug", "info", "warning", "error"]},
            "the broker's log level, default info (its log is attached to failing tests)",
            "string",
        ),
        (
            "--minibroker-set",
            {"metavar": "KEY=VALUE", "action": "append"},
            "a property of the session's broker (repeatable; ini: one per line)",
            "linelist",
        ),
        (
            "--minibroker-clock",
            {"choices": ["system", "manual", "offset"]},
            "the session broker's clock: manual moves only when a test advances it (default system)",
            "string",
        ),
        (
            "--minibroker-control",
            {"metavar": "HOST:PORT"},
            "the control plane of the broker MINIBROKER_BOOTSTRAP_SERVERS names (or MINIBROKER_CONTROL)",
            "string",
        ),
        (
            "--minibroker-control-token",
            {"metavar": "TOKEN"},
            "the control plane's token (or MINIBROKER_CONTROL_TOKEN); the session broker's own "
            "gets a random one unless this is given",
            "string",
        ),
    ]
    for flag, kwargs, help_text, ini_type in options:
        name = flag.lstrip("-").replace("-", "_")
        group.addoption(flag, dest=name, help=help_text, **kwargs)
        parser.addini(name, f"{help_text} (the command line's {flag} wins)", type=ini_type)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_DOC)


def _set_options(config: pytest.Config) -> dict[str, object]:
    """The session broker's properties from the ini's `minibroker_set` lines, then the command
    line's `--minibroker-set` (which win)."""
    found: dict[str, object] = {}
    for line in [*(config.getini("minibroker_set") or []), *(config.getoption("minibroker_set") or [])]:
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"--minibroker-set {line!r}: expected KEY=VALUE")
        found[key.strip()] = value.strip()
    return found


# ------------------------------------------------------------------ the session's broker
@pytest.fixture(scope="session")
def minibroker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess | ExternalBroker]:
    """The session's broker; see the module docstring."""
    config = request.config
    external = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if external:
        check_reachable(external)
        handle = ExternalBroker(external, control_address(config), control_token(config))
        config.stash[_BROKER_KEY] = handle
        yield handle
        return
    proc = start_broker(
        tmp_path_factory.mktemp("minibroker"),
        _set_options(config),
        clock=option(config, "minibroker_clock"),
        token=option(config, "minibroker_control_token"),
        config_file=option(config, "minibroker_config"),
        log_level=option(config, "minibroker_log_level") or "info",
    )
    config.stash[_BROKER_KEY] = proc
    try:
        yield proc
    finally:
        del config.stash[_BROKER_KEY]
        stop_broker(proc)


@pytest.fixture(scope="session")
def kafka_bootstrap_servers(minibroker: BrokerProcess | ExternalBroker) -> str:
    return minibroker.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap_servers: str) -> Iterator[Any]:  # kafka-python has no types
    yield from _admin(kafka_bootstrap_servers)


def _admin(bootstrap_servers: str) -> Iterator[Any]:
    admin = _kafka_admin_module().KafkaAdminClient(
        bootstrap_servers=bootstrap_servers,
        client_id="minibroker-pytest-admin",
        request_timeout_ms=int(_TOPIC_TIMEOUT_S * 1000),
    )
    yield admin
    admin.close()


# ------------------------------------------------------------------ @pytest.mark.minibroker
@pytest.fixture
def _minibroker_marked(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BrokerProcess]:
    """A @pytest.mark.minibroker test's own broker (stands in for `minibroker` for that test)."""
    marker = request.node.get_closest_marker("minibroker")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    config = marker.args[0] if marker is not None and marker.args else None
    kwargs.setdefault("log_level", option(request.config, "minibroker_log_level") or "info")
    proc = start_broker(tmp_path / "minibroker", config, **kwargs)
    request.node.stash[_TEST_BROKER_KEY] = proc
    try:
        yield proc
    finally:
        stop_broker(proc)


@pytest.fixture
def _minibroker_marked_bootstrap(_minibroker_marked: BrokerProcess) -> str:
    return _minibroker_marked.bootstrap_servers


@pytest.fixture
def _minibroker_marked_admin(_minibroker_marked_bootstrap: str) -> Iterator[Any]:
    yield from _admin(_minibroker_marked_bootstrap)


#: What a @pytest.mark.minibroker test gets instead of the session's fixtures.
_MARKED_OVERRIDES = (
    ("minibroker", "_minibroker_marked"),
    ("kafka_bootstrap_servers", "_minibroker_marked_bootstrap"),
    ("kafka_admin", "_minibroker_marked_admin"),
)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and item.get_closest_marker("minibroker") is not None:
            _give_own_broker(item)


def _give_own_broker(item: pytest.Function) -> None:
    """Make the test's `minibroker`, `kafka_bootstrap_servers` and `kafka_admin` its own
    function-scoped ones, as a fixture defined closer to the test overrides a conftest's: the
    closest definition of a name (the last in the item's list) wins, for the test and for every
    fixture it uses. The session's fixtures and their cached values stay untouched."""
    try:
        info = item._fixtureinfo
        manager = item.session._fixturemanager
        defs = dict(info.name2fixturedefs)
        for public, private in _MARKED_OVERRIDES:
            own = manager.getfixturedefs(private, item)
            if public in defs and own:
                defs[public] = (*defs[public], *own)
        item._fixtureinfo = dataclasses.replace(info, name2fixturedefs=defs)  # not the siblings' copy
        item._initrequest()
    except (AttributeError, TypeError) as exc:  # pytest's fixture internals moved
        raise pytest.UsageError(
            f"@pytest.mark.minibroker on {item.nodeid}: this pytest's fixture internals are not the "
            f"ones the plugin knows ({exc}); use a minibroker_proc fixture instead"
        ) from None


# ------------------------------------------------------------------ the control plane
@pytest.fixture
def minibroker_control(minibroker: BrokerProcess | ExternalBroker) -> Iterator[ControlClient]:
    """The broker's control-plane client; afterwards every fault and observer is removed and
    every crash point disarmed (unless the test left the broker stopped or crashed)."""
    yield minibroker.control
    if minibroker.running:
        minibroker.control.reset()  # its client again: a restart may have moved the port


@pytest.fixture
def minibroker_faults(minibroker_control: ControlClient) -> FaultsAPI:
    """`minibroker_faults.add(api="Produce", error="NOT_LEADER_OR_FOLLOWER", count=3)`; cleared
    after the test."""
    return minibroker_control.faults


@pytest.fixture
def minibroker_clock(minibroker_control: ControlClient) -> ClockAPI:
    """`minibroker_clock.advance(61)` (seconds; the broker needs a manual or offset clock:
    `--minibroker-clock manual` or `@pytest.mark.minibroker(clock="manual")`)."""
    return minibroker_control.clock


@pytest.fixture
def minibroker_state(minibroker_control: ControlClient) -> StateAPI:
    """`minibroker_state.partition("orders", 0)`, `.transactions()`, `.wait_for_group(...)`."""
    return minibroker_control.state


# ------------------------------------------------------------------ topics
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


# ------------------------------------------------------------------ client factories
def _dotted(config: dict[str, object] | None, props: dict[str, object]) -> dict[str, object]:
    """librdkafka settings: a dict of dotted names, then keywords with underscores for dots."""
    return {**(config or {}), **{key.replace("_", "."): value for key, value in props.items()}}


def _close_all(made: list[Any], close: Callable[[Any], object]) -> None:
    for client in reversed(made):
        try:
            close(client)
        except Exception as exc:  # noqa: BLE001 - clean-up must not turn a pass into an error
            print(f"minibroker: could not close {client!r}: {exc}")


def _group_id(request: pytest.FixtureRequest) -> str:
    return f"{_topic_stem(request.node.name)}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def kafka_producer(kafka_bootstrap_servers: str) -> Iterator[Callable[..., Any]]:
    """Factory: `kafka_producer(**config)` -> a kafka-python KafkaProducer on the broker."""
    made: list[Any] = []

    def make(**config: Any) -> Any:
        producer = _kafka_module().KafkaProducer(**{"bootstrap_servers": kafka_bootstrap_servers, **config})
        made.append(producer)
        return producer

    yield make
    _close_all(made, lambda p: p.close(timeout=_CLOSE_TIMEOUT_S))


@pytest.fixture
def kafka_consumer(kafka_bootstrap_servers: str) -> Iterator[Callable[..., Any]]:
    """Factory: `kafka_consumer(*topics, **config)` -> a kafka-python KafkaConsumer on the broker,
    reading from the earliest offset unless `auto_offset_reset` says otherwise."""
    made: list[Any] = []

    def make(*topics: str, **config: Any) -> Any:
        settings = {"bootstrap_servers": kafka_bootstrap_servers, "auto_offset_reset": "earliest", **config}
        consumer = _kafka_module().KafkaConsumer(*topics, **settings)
        made.append(consumer)
        return consumer

    yield make
    _close_all(made, lambda c: c.close())


@pytest.fixture
def confluent_producer(kafka_bootstrap_servers: str) -> Iterator[Callable[..., Any]]:
    """Factory: `confluent_producer(config=None, **props)` -> a confluent_kafka.Producer (props:
    librdkafka names with underscores for dots, `enable_idempotence=True`); flushed afterwards."""
    made: list[Any] = []

    def make(config: dict[str, object] | None = None, **props: object) -> Any:
        import confluent_kafka  # noqa: PLC0415 - only for the tests that use it

        producer = confluent_kafka.Producer(
            {"bootstrap.servers": kafka_bootstrap_servers, **_dotted(config, props)}
        )
        made.append(producer)
        return producer

    yield make
    _close_all(made, lambda p: p.flush(_CLOSE_TIMEOUT_S))


@pytest.fixture
def confluent_consumer(
    request: pytest.FixtureRequest, kafka_bootstrap_servers: str
) -> Iterator[Callable[..., Any]]:
    """Factory: `confluent_consumer(config=None, **props)` -> a confluent_kafka.Consumer with a
    group id of its own and `auto.offset.reset=earliest` unless given; closed afterwards."""
    made: list[Any] = []

    def make(config: dict[str, object] | None = None, **props: object) -> Any:
        import confluent_kafka  # noqa: PLC0415 - only for the tests that use it

        settings = {
            "bootstrap.servers": kafka_bootstrap_servers,
            "group.id": _group_id(request),
            "auto.offset.reset": "earliest",
            **_dotted(config, props),
        }
        consumer = confluent_kafka.Consumer(settings)
        made.append(consumer)
        return consumer

    yield make
    _close_all(made, lambda c: c.close())


async def _stop_all(made: list[Any]) -> None:
    for client in reversed(made):
        try:
            await client.stop()
        except Exception as exc:  # noqa: BLE001 - clean-up must not turn a pass into an error
            print(f"minibroker: could not stop {client!r}: {exc}")


async def _aiokafka_producer(bootstrap_servers: str) -> AsyncIterator[Callable[..., Any]]:
    made: list[Any] = []

    async def make(**config: Any) -> Any:
        import aiokafka  # noqa: PLC0415 - only for the tests that use it

        producer = aiokafka.AIOKafkaProducer(**{"bootstrap_servers": bootstrap_servers, **config})
        made.append(producer)
        await producer.start()
        return producer

    yield make
    await _stop_all(made)


async def _aiokafka_consumer(bootstrap_servers: str) -> AsyncIterator[Callable[..., Any]]:
    made: list[Any] = []

    async def make(*topics: str, **config: Any) -> Any:
        import aiokafka  # noqa: PLC0415 - only for the tests that use it

        settings = {"bootstrap_servers": bootstrap_servers, "auto_offset_reset": "earliest", **config}
        consumer = aiokafka.AIOKafkaConsumer(*topics, **settings)
        made.append(consumer)
        await consumer.start()
        return consumer

    yield make
    await _stop_all(made)


if importlib.util.find_spec("pytest_asyncio") is not None:
    import pytest_asyncio

    @pytest_asyncio.fixture
    async def aiokafka_producer(kafka_bootstrap_servers: str) -> AsyncIterator[Callable[..., Any]]:
        """Async factory: `await aiokafka_producer(**config)` -> a started AIOKafkaProducer on the
        broker; stopped afterwards (pytest-asyncio runs it on the test's loop)."""
        async for make in _aiokafka_producer(kafka_bootstrap_servers):
            yield make

    @pytest_asyncio.fixture
    async def aiokafka_consumer(kafka_bootstrap_servers: str) -> AsyncIterator[Callable[..., Any]]:
        """Async factory: `await aiokafka_consumer(*topics, **config)` -> a started
        AIOKafkaConsumer reading from the earliest offset; stopped afterwards."""
        async for make in _aiokafka_consumer(kafka_bootstrap_servers):
            yield make

else:

    @pytest.fixture
    def aiokafka_producer() -> None:
        pytest.fail("aiokafka_producer needs pytest-asyncio (pip install pytest-asyncio)", pytrace=False)

    @pytest.fixture
    def aiokafka_consumer() -> None:
        pytest.fail("aiokafka_consumer needs pytest-asyncio (pip install pytest-asyncio)", pytrace=False)


# ------------------------------------------------------------------ the broker's log in reports
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    own = item.stash.get(_TEST_BROKER_KEY, None)
    handle = own if own is not None else item.config.stash.get(_BROKER_KEY, None)
    if handle is None or "minibroker" not in getattr(item, "fixturenames", ()):
        return report
    if report.when == "setup":
        item.stash[_LOG_OFFSET_KEY] = 0 if own is not None else handle.log_size()
    elif report.failed:
        text = handle.log_since(item.stash.get(_LOG_OFFSET_KEY, 0))
        lines = text.splitlines()[-_REPORT_LOG_LINES:]
        if lines:
            report.sections.append(("minibroker log", "\n".join(lines)))
    return report
