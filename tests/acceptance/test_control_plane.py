"""The control plane's own rules (broker/control/): off by default, loopback, a token where the
broker authenticates, HTTP answers for bad calls. Each part (faults, crash points, clock, state)
has its own test file."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

import minibroker.testing
from minibroker.control import ControlClient, ControlError
from tests.acceptance.test_security_auth import USERS
from tests.support.security import plain_jaas

pytestmark = pytest.mark.timeout(90)


def _raw(method: str, url: str, body: bytes | None = None, token: str | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_off_by_default():
    with minibroker.testing.broker() as b:
        with pytest.raises(RuntimeError, match="control plane is off"):
            b.control  # noqa: B018 - the property raises
        assert "control endpoint ready" not in b.log_text()


def test_routes_reset_and_http_errors():
    with minibroker.testing.broker(control=True) as b:
        ready = b.wait_for_log(r"control endpoint ready")
        assert '"host": "127.0.0.1"' in ready, ready  # loopback unless told otherwise
        paths = {r["path"] for r in b.control.routes()}
        assert {"^/v1$", "^/v1/reset$"} <= paths
        b.control.reset()
        base = b.control.base
        status, answer = _raw("GET", f"{base}/v1/no-such-thing")
        assert status == 404 and "GET /v1 lists them" in answer["error"]
        status, answer = _raw("DELETE", f"{base}/v1")
        assert status == 405 and "use GET" in answer["error"]
        status, answer = _raw("POST", f"{base}/v1/reset", body=b"{not json")
        assert status == 400 and "not JSON" in answer["error"]
        # the broker serves Kafka clients as before
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        try:
            assert admin.describe_cluster()["cluster_id"]
        finally:
            admin.close()


def test_a_broker_that_authenticates_needs_a_token():
    sasl = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "sasl.enabled.mechanisms": "PLAIN",
    }
    with pytest.raises(minibroker.testing.BrokerStartError, match="needs minibroker.control.token"):
        with minibroker.testing.broker(sasl, control=True):
            pytest.fail("must not start")
    with minibroker.testing.broker(sasl, control=True, minibroker_control_token="s3cret") as b:
        assert b.control.routes()  # the client sends the broker's token
        status, answer = _raw("GET", f"{b.control.base}/v1")
        assert status == 401 and "bearer token" in answer["error"]
        status, _ = _raw("GET", f"{b.control.base}/v1", token="wrong")
        assert status == 401
        with pytest.raises(ControlError) as refused:
            ControlClient(b.control.base, "wrong").routes()
        assert refused.value.status == 401


def test_a_moved_clock_needs_the_control_plane(tmp_path):
    proc = minibroker.testing.BrokerProcess(tmp_path, {"minibroker.control.clock": "manual"}, profile="test")
    with pytest.raises(minibroker.testing.BrokerStartError, match="needs the control plane"):
        proc.start()
    proc.cleanup()
