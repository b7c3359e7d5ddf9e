"""Fixtures: a real minibroker subprocess on loopback (fresh data dir per test, or shared per
module), plus helpers. On a failing test the broker's log tail is printed (shown by pytest as
captured stderr of the teardown)."""

from __future__ import annotations

import logging

import pytest

from tests.support.broker import BrokerFactory, BrokerProcess

# the clients' INFO chatter drowns the broker log tail in failure reports
for _name in ("kafka", "aiokafka"):
    logging.getLogger(_name).setLevel(logging.WARNING)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


def _failed(request) -> bool:
    node = request.node
    return any(getattr(getattr(node, f"rep_{w}", None), "failed", False) for w in ("setup", "call"))


@pytest.fixture
def broker_factory(request, tmp_path):
    factory = BrokerFactory(tmp_path)
    yield factory
    factory.teardown(_failed(request))


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    """A fresh broker on a fresh data directory (function scope)."""
    return broker_factory()


@pytest.fixture
def bootstrap(broker) -> str:
    return broker.bootstrap


@pytest.fixture(scope="module")
def shared_broker(request, tmp_path_factory) -> BrokerProcess:
    """One broker for a whole module; tests must use unique topic names."""
    factory = BrokerFactory(tmp_path_factory.mktemp("shared"))
    b = factory()
    yield b
    failed = request.session.testsfailed > 0
    factory.teardown(failed)
