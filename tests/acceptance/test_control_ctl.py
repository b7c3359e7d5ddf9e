"""`minibroker ctl`: each command's HTTP request (a fake client records it), and the real command
against a running broker's control plane."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys

import pytest

import minibroker.testing
from minibroker.control import ControlClient, ControlError
from minibroker.control.ctl import main


class FakeClient(ControlClient):
    """Records each request instead of sending it; answers `answer` or raises `refuse`."""

    def __init__(self, answer=None, refuse: ControlError | None = None) -> None:
        super().__init__("127.0.0.1:1")
        self.calls: list[tuple] = []
        self.answer = {"ok": True} if answer is None else answer
        self.refuse = refuse

    def request(self, method, path, body=None, *, query=None, timeout=None):
        self.calls.append((method, path, body, query or {}, timeout))
        if self.refuse is not None:
            raise self.refuse
        return self.answer


def _ctl(*argv: str, client: FakeClient | None = None) -> tuple[int, FakeClient, str, str]:
    client = client or FakeClient()
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), client=client, stdout=out, stderr=err)
    return rc, client, out.getvalue(), err.getvalue()


MAPPING = [
    (
        [
            "faults", "add", "--api", "Produce", "--topic", "orders", "--partition", "0",
            "--error", "NOT_LEADER_OR_FOLLOWER", "--count", "3",
        ],
        ("POST", "/v1/faults", {"api": "Produce", "topic": "orders", "partition": 0,
                                "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}, {}, None),
    ),
    (
        [
            "faults", "add", "--api", "0", "--versions", "3-9", "--client-id", "c", "--transactional-id", "t",
            "--group-id", "g", "--where", "acks=-1", "--where", "topic_data.name=orders", "--error", "6",
            "--delay-ms", "200", "--disconnect", "after", "--throttle-ms", "50", "--every", "2",
            "--probability", "0.5", "--seed", "7",
        ],
        ("POST", "/v1/faults", {"api": 0, "versions": [3, 9], "client_id": "c", "transactional_id": "t",
                                "group_id": "g", "where": {"acks": -1, "topic_data.name": "orders"},
                                "error": 6, "delay_ms": 200, "disconnect": "after", "throttle_ms": 50,
                                "every": 2, "probability": 0.5, "seed": 7}, {}, None),
    ),
    (
        ["faults", "observe", "--api", "JoinGroup", "--versions", "5"],
        ("POST", "/v1/faults", {"api": "JoinGroup", "versions": [5, 5], "observe": True}, {}, None),
    ),
    (["faults", "list"], ("GET", "/v1/faults", None, {}, None)),
    (["faults", "show", "f1"], ("GET", "/v1/faults/f1", None, {}, None)),
    (["faults", "rm", "f1"], ("DELETE", "/v1/faults/f1", None, {}, None)),
    (["faults", "clear"], ("DELETE", "/v1/faults", None, {}, None)),
    (
        ["faults", "wait", "f1", "3", "--timeout", "12"],
        ("GET", "/v1/faults/f1/wait", None, {"n": 3, "timeout": 12.0}, 12.0),
    ),
    (["crash-at", "txn.after_prepare"], ("POST", "/v1/crash", {"point": "txn.after_prepare"}, {}, None)),
    (
        ["crash-at", "txn.after_markers", "--key", "tx-1", "--after", "2", "--hits", "3"],
        ("POST", "/v1/crash", {"point": "txn.after_markers", "key": "tx-1", "after": 2, "hits": 3}, {}, None),
    ),
    (["crash", "list"], ("GET", "/v1/crash", None, {}, None)),
    (["crash", "clear"], ("DELETE", "/v1/crash", None, {}, None)),
    (["clock", "show"], ("GET", "/v1/clock", None, {}, None)),
    (["clock", "advance", "61"], ("POST", "/v1/clock/advance", {"seconds": 61.0}, {}, None)),
    (["state", "partition", "orders", "2"], ("GET", "/v1/state/partitions/orders/2", None, {}, None)),
    (["state", "partitions"], ("GET", "/v1/state/partitions", None, {}, None)),
    (
        ["state", "partitions", "--topic", "orders"],
        ("GET", "/v1/state/partitions", None, {"topic": "orders"}, None),
    ),
    (["state", "transactions"], ("GET", "/v1/state/transactions", None, {}, None)),
    (["state", "groups"], ("GET", "/v1/state/groups", None, {}, None)),
    (["state", "group", "my group/1"], ("GET", "/v1/state/groups/my%20group%2F1", None, {}, None)),
    (["state", "committed", "g"], ("GET", "/v1/state/groups/g/offsets", None, {}, None)),
    (
        ["wait", "group", "g", "--members", "2", "--timeout", "5"],
        ("GET", "/v1/state/wait/group", None,
         {"timeout": 5.0, "group": "g", "state": "Stable", "members": 2}, 5.0),
    ),
    (
        ["wait", "offset", "g", "orders", "0", "10"],
        ("GET", "/v1/state/wait/offset", None,
         {"timeout": 30.0, "group": "g", "topic": "orders", "partition": 0, "offset": 10}, 30.0),
    ),
    (
        ["wait", "transactions-complete", "--timeout", "9"],
        ("GET", "/v1/state/wait/transactions-complete", None, {"timeout": 9.0}, 9.0),
    ),
    (["reset"], ("POST", "/v1/reset", {}, {}, None)),
    (["routes"], ("GET", "/v1", None, {}, None)),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "expected"), MAPPING, ids=[" ".join(a[:2]) for a, _ in MAPPING])
def test_command_maps_to_its_request(argv, expected):
    rc, client, out, err = _ctl(*argv)
    assert (rc, err) == (0, "")
    assert client.calls == [expected]
    assert json.loads(out) == {"ok": True}


def test_answer_is_printed_as_indented_json():
    rc, _, out, _ = _ctl("faults", "list", client=FakeClient({"faults": [{"id": "f1", "fired": 2}]}))
    assert rc == 0
    assert out == json.dumps({"faults": [{"id": "f1", "fired": 2}]}, indent=2) + "\n"


def test_refusal_goes_to_stderr_with_exit_1():
    refused = FakeClient(refuse=ControlError(404, "no fault f9"))
    rc, _, out, err = _ctl("faults", "rm", "f9", client=refused)
    assert (rc, out) == (1, "")
    assert err == "minibroker ctl: control plane: no fault f9 (HTTP 404)\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["faults", "add", "--versions", "x-y"],
        ["faults", "add", "--where", "no-equals-sign"],
        ["faults", "add", "--disconnect", "sideways"],
        ["clock", "advance"],
        ["state", "partition", "orders", "zero"],
        ["nonsense"],
        [],
    ],
)
def test_bad_command_line_exits_2_without_a_request(argv, capsys):
    rc, client, out, _ = _ctl(*argv)
    assert rc == 2 and client.calls == [] and out == ""
    assert "usage: minibroker ctl" in capsys.readouterr().err  # argparse writes to sys.stderr


def test_no_address_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("MINIBROKER_CONTROL", raising=False)
    err = io.StringIO()
    assert main(["routes"], stderr=err) == 2
    assert "give --control HOST:PORT or set MINIBROKER_CONTROL" in err.getvalue()


def _run_ctl(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minibroker", "ctl", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_ctl_against_a_running_broker():
    with minibroker.testing.broker(control=True, minibroker_control_token="s3cret") as b:
        address = f"127.0.0.1:{b.control_port}"
        done = _run_ctl("--control", address, "--token", "s3cret", "routes")
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["bootstrap_servers"] == b.bootstrap_servers
        assert {"POST", "GET"} <= {r["method"] for r in answer["routes"]}
        assert any("reset" in r["path"] for r in answer["routes"]), answer["routes"]

        env = {"MINIBROKER_CONTROL": address, "MINIBROKER_CONTROL_TOKEN": "s3cret"}
        done = _run_ctl("reset", env=env)
        assert (done.returncode, json.loads(done.stdout)) == (0, {"reset": True}), done.stderr

        done = _run_ctl("--control", address, "--token", "wrong", "reset")
        assert (done.returncode, done.stdout) == (1, ""), done.stdout
        assert "HTTP 401" in done.stderr and "bearer token" in done.stderr, done.stderr


def test_ctl_cannot_reach_exits_1():
    with socket.socket() as placeholder:  # bound, not listening: connections are refused
        placeholder.bind(("127.0.0.1", 0))
        done = _run_ctl("--control", f"127.0.0.1:{placeholder.getsockname()[1]}", "routes")
    assert done.returncode == 1 and done.stdout == ""
    assert "minibroker ctl: control plane: cannot reach http://127.0.0.1:" in done.stderr, done.stderr
