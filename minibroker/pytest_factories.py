"""Fixture factories for brokers beyond the session's (pytest-postgresql's convention;
docs/control-plane/pytest.md).

In a conftest.py:

    from minibroker.pytest_factories import minibroker_noproc, minibroker_proc

    # a second broker with other settings, beside the session's `minibroker`
    compacting_broker = minibroker_proc(scope="session", log_cleaner_min_cleanable_ratio=0.01)
    # a fresh broker with a clock that moves only when the test says so, for each test using it
    manual_clock_broker = minibroker_proc(clock="manual")
    # a broker started elsewhere (docker-compose, CI service), its control plane found by address
    shared_broker = minibroker_noproc(bootstrap_servers="127.0.0.1:9092", control="127.0.0.1:19093")

`minibroker_proc` fixtures are `minibroker.testing.BrokerProcess` objects (`.bootstrap_servers`,
`.faults`, `.clock`, `.state`, `.crash_at`, `.restart()`...); `minibroker_noproc` fixtures are
ExternalBroker objects with the same control-plane attributes. The plugin builds its own session
broker and the `@pytest.mark.minibroker(...)` one with `start_broker` too.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest

from minibroker.control.client import ControlClient, ControlParts
from minibroker.testing import BrokerProcess, properties

__all__ = [
    "BOOTSTRAP_ENV",
    "CONTROL_ENV",
    "CONTROL_TOKEN_ENV",
    "ExternalBroker",
    "minibroker_noproc",
    "minibroker_proc",
    "option",
    "start_broker",
]

BOOTSTRAP_ENV = "MINIBROKER_BOOTSTRAP_SERVERS"
CONTROL_ENV = "MINIBROKER_CONTROL"
CONTROL_TOKEN_ENV = "MINIBROKER_CONTROL_TOKEN"
_CONNECT_TIMEOUT_S = 3.0

Scope = Literal["session", "package", "module", "class", "function"]


class ExternalBroker(ControlParts):
    """A broker (or Kafka cluster) this session did not start: its address, and its control
    plane's when one is known (`--minibroker-control`, MINIBROKER_CONTROL)."""

    def __init__(self, bootstrap_servers: str, control: str | None = None, token: str | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.control_address = control or None
        self.control_token = token or None
        self._control: ControlClient | None = None

    running = True  # as far as this session knows

    def log_size(self) -> int:
        return 0

    def log_since(self, _offset: int) -> str:
        return ""

    @property
    def control(self) -> ControlClient:
        """The control plane's client; a broker given without its control address has none."""
        if self.control_address is None:
            raise RuntimeError(
                f"the broker at {self.bootstrap_servers} was started elsewhere and no control plane "
                f"address was given: pass --minibroker-control HOST:PORT (ini minibroker_control, or "
                f"{CONTROL_ENV}), and its token with --minibroker-control-token if it has one"
            )
        if self._control is None:
            self._control = ControlClient(self.control_address, self.control_token)
        return self._control

    def __repr__(self) -> str:
        return f"ExternalBroker({self.bootstrap_servers!r}, control={self.control_address!r})"


def option(config: pytest.Config, name: str) -> Any:
    """A plugin option: the command line's value if given, else the ini file's (None if neither).
    `name` is the ini name, `minibroker_log_level` for `--minibroker-log-level`."""
    value = config.getoption(name, None)
    if value not in (None, []):
        return value
    found = config.getini(name)
    return found if found not in ("", []) else None


def control_address(config: pytest.Config) -> str | None:
    """`--minibroker-control`, else MINIBROKER_CONTROL, else the ini's `minibroker_control`."""
    given = config.getoption("minibroker_control", None) or os.environ.get(CONTROL_ENV, "").strip()
    return given or option(config, "minibroker_control")


def control_token(config: pytest.Config) -> str | None:
    """`--minibroker-control-token`, else MINIBROKER_CONTROL_TOKEN, else the ini's."""
    given = config.getoption("minibroker_control_token", None) or os.environ.get(CONTROL_TOKEN_ENV, "")
    return given or option(config, "minibroker_control_token")


def start_broker(
    data_dir: str | os.PathLike[str],
    config: dict[str, object] | None = None,
    *,
    clock: str | None = None,
    control: bool = True,
    token: str | None = None,
    profile: str = "test",
    config_file: str | os.PathLike[str] | None = None,
    log_level: str = "info",
    **props: object,
) -> BrokerProcess:
    """A started broker: the test profile, a free port, `config`/`props` as Kafka properties
    (dots as underscores in keyword names), the control plane on (any port) unless `control` is
    False. The control plane gets `token`, or a random one (a broker whose listeners authenticate
    requires one); its BrokerProcess's `.control` client carries it."""
    merged = properties(config, **props)
    if control or clock not in (None, "system"):
        merged.setdefault("minibroker.control.port", 0)
        merged.setdefault("minibroker.control.token", token or secrets.token_hex(16))
    if clock is not None:
        merged["minibroker.control.clock"] = clock
    extra = ["--config", os.path.abspath(config_file)] if config_file else []
    proc = BrokerProcess(
        data_dir, merged, profile=profile, log_format="console", log_level=log_level, extra_args=extra
    )
    proc.start()
    return proc


def stop_broker(proc: BrokerProcess) -> None:
    """Teardown that never raises; says so when the broker did not stop cleanly."""
    rc = proc.cleanup()
    if rc not in (None, 0):
        print(f"minibroker exited with code {rc} at teardown\n{proc.log_tail()}")


def minibroker_proc(
    scope: Scope = "function",
    config: dict[str, object] | None = None,
    *,
    clock: str | None = None,
    control: bool = True,
    token: str | None = None,
    profile: str = "test",
    config_file: str | os.PathLike[str] | None = None,
    log_level: str | None = None,
    **props: object,
) -> Callable[..., Iterator[BrokerProcess]]:
    """A fixture starting its own broker (a BrokerProcess) with these settings, on a free port
    with a temporary data directory, stopped at the end of `scope`. Assign it to a name in a
    conftest.py or test module: that name is the fixture's. Arguments as `start_broker`;
    `log_level` defaults to the session's (`--minibroker-log-level`)."""

    @pytest.fixture(scope=scope)
    def fixture(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[BrokerProcess]:
        proc = start_broker(
            tmp_path_factory.mktemp("minibroker"),
            config,
            clock=clock,
            control=control,
            token=token,
            profile=profile,
            config_file=config_file,
            log_level=log_level or option(request.config, "minibroker_log_level") or "info",
            **props,
        )
        try:
            yield proc
        finally:
            stop_broker(proc)

    return fixture


def minibroker_noproc(
    bootstrap_servers: str | None = None,
    control: str | None = None,
    token: str | None = None,
    *,
    scope: Scope = "session",
) -> Callable[..., ExternalBroker]:
    """A fixture for a broker started elsewhere: an ExternalBroker at `bootstrap_servers`
    (default MINIBROKER_BOOTSTRAP_SERVERS) whose control plane is at `control` (default
    `--minibroker-control` / MINIBROKER_CONTROL / ini `minibroker_control`) with `token` (default
    `--minibroker-control-token` / MINIBROKER_CONTROL_TOKEN). Fails at once, naming the address,
    when nothing accepts connections there."""

    @pytest.fixture(scope=scope)
    def fixture(request: pytest.FixtureRequest) -> ExternalBroker:
        bootstrap = bootstrap_servers or os.environ.get(BOOTSTRAP_ENV, "").strip()
        source = "minibroker_noproc(bootstrap_servers=...)" if bootstrap_servers else BOOTSTRAP_ENV
        if not bootstrap:
            pytest.fail(
                f"minibroker_noproc: no broker address: pass bootstrap_servers= or set {BOOTSTRAP_ENV}",
                pytrace=False,
            )
        check_reachable(bootstrap, source)
        return ExternalBroker(
            bootstrap,
            control or control_address(request.config),
            token or control_token(request.config),
        )

    return fixture


def check_reachable(bootstrap_servers: str, source: str = BOOTSTRAP_ENV) -> None:
    """Fail fast, naming where the address came from, when no address of `bootstrap_servers`
    accepts a TCP connection (a client would otherwise retry for its whole request timeout)."""
    env = source == BOOTSTRAP_ENV
    unset = f"unset {BOOTSTRAP_ENV} to let the plugin start its own broker"
    errors = []
    for address in filter(None, (a.strip() for a in bootstrap_servers.split(","))):
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            pytest.fail(
                f"{source}={bootstrap_servers!r}: {address!r} is not host:port"
                + (f" ({unset})" if env else ""),
                pytrace=False,
            )
        try:
            socket.create_connection((host.strip("[]"), int(port)), _CONNECT_TIMEOUT_S).close()
            return
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
    pytest.fail(
        f"{source}={bootstrap_servers!r}: no broker accepts connections there "
        f"({'; '.join(errors) or 'no address'}). Start that broker, "
        + (f"fix the variable, or {unset}." if env else "or fix the address."),
        pytrace=False,
    )
