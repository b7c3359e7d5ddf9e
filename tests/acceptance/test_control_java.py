"""The test control plane's HTTP JSON API driven from Java, as a JUnit test would drive it:
jvm/clients/src/main/java/minibroker/ControlCheck.java (java.net.http.HttpClient and a few lines
of JSON; compiled by `make jvm`) against kafka-clients 4.4.0. Each scenario asserts on its own
side and ends with a `RESULT` line that the test checks too.

Each scenario first checks that the broker lists the routes it needs (GET /v1)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.helpers import unique_name
from tests.support.java import java_command, parse_result

JAVA_TIMEOUT = 120
VERSION = "4.4.0"
CONTROL = {"minibroker.control.port": 0}
MANUAL_CLOCK = {**CONTROL, "minibroker.control.clock": "manual"}

#: scenario -> (broker properties, routes it needs as (method, a concrete path), expected RESULT)
SCENARIOS: dict[str, tuple[dict, list[tuple[str, str]], dict[str, str]]] = {
    "routes": (
        CONTROL,
        [("GET", "/v1"), ("POST", "/v1/reset")],
        {
            "routes_listed": "true",
            "has_reset": "true",
            "bootstrap": "true",
            "reset": "true",
            "unknown_route": "404",
        },
    ),
    "produce-retries": (
        CONTROL,
        [("POST", "/v1/faults"), ("GET", "/v1/faults/1/wait"), ("DELETE", "/v1/faults")],
        {
            "acked": "50",
            "offsets_contiguous": "true",  # a faulted produce appended nothing
            "in_log": "50",
            "distinct": "50",
            "fired": "3",
            "listed": "1",
            "after_clear": "0",
        },
    ),
    "observe-fetch": (
        CONTROL,
        [("POST", "/v1/faults"), ("GET", "/v1/faults/1/wait"), ("DELETE", "/v1/faults/1")],
        {"consumed": "20", "observed": "true", "removed": "404"},
    ),
    "txn-timeout": (
        MANUAL_CLOCK,
        [
            ("GET", "/v1/clock"),
            ("POST", "/v1/clock/advance"),
            ("GET", "/v1/state/wait/transactions-complete"),
        ],
        {
            "clock": "manual",
            "lso_while_stuck": "0",  # the stuck transaction holds read_committed consumers
            "fired_some": "true",
            "visible": "5",  # the committed transaction only
            "stuck_visible": "false",
            "stuck_commit_failed": "true",
        },
    ),
    "fault-kinds": (
        CONTROL,
        [("POST", "/v1/faults"), ("GET", "/v1/faults/1"), ("DELETE", "/v1/faults")],
        {
            "acked": "20",
            "offsets_contiguous": "true",  # no faulted produce appended anything
            "consumed": "20",
            "distinct": "20",
            "every_fired": "true",  # every 2nd Produce: about half of the requests and retries
            "random_fired": "true",
            "observed_all_acks": "true",
            "delay": "2",
            "throttle": "1",
            "disconnect": "1",
            "client": "2",
        },
    ),
}


def missing_routes(broker, needed: list[tuple[str, str]]) -> list[str]:
    """The needed routes this broker does not serve (GET /v1 lists each path as a regex)."""
    served = [(r["method"], re.compile(r["path"])) for r in broker.control.routes()]
    return [
        f"{method} {path}"
        for method, path in needed
        if not any(m == method and pattern.match(path) for m, pattern in served)
    ]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_java_drives_the_control_plane(broker_factory, scenario):
    props, needed, expected = SCENARIOS[scenario]
    broker = broker_factory(props)
    assert not (missing := missing_routes(broker, needed)), f"the broker does not serve {missing}"
    args = (broker.bootstrap, broker.control.base, scenario, unique_name(f"jctl-{scenario}"))
    proc = subprocess.run(
        java_command("ControlCheck", VERSION, *args), capture_output=True, text=True, timeout=JAVA_TIMEOUT
    )
    assert proc.returncode == 0, f"ControlCheck {args} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert parse_result(proc.stdout) == expected
    # every control request ran on the broker's loop and none failed inside it
    assert "control request failed" not in broker.log_text()
