"""`minibroker ctl`: a running broker's test control plane from a shell (docs/control-plane/ctl.md).

    minibroker ctl --control 127.0.0.1:19093 faults add --api Produce --topic orders \\
        --error NOT_LEADER_OR_FOLLOWER --count 3
    minibroker ctl crash-at txn.after_prepare          # MINIBROKER_CONTROL=127.0.0.1:19093
    minibroker ctl clock advance 61
    minibroker ctl wait group g --state Stable --members 2 --timeout 30

Every command is one HTTP request of the control plane's JSON API (broker/control/http.py) through
ControlClient: `build_request` maps the parsed command line to (method, path, body, query), and the
answer is printed as indented JSON on stdout. A refusal (the broker's message, e.g. an unknown
fault id or a wait that timed out) goes to stderr with exit code 1; a bad command line exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import quote

from minibroker.common.faults import CRASH_POINTS
from minibroker.control.client import ControlClient, ControlError

__all__ = ["CONTROL_ENV", "TOKEN_ENV", "Call", "build_parser", "build_request", "main"]

CONTROL_ENV = "MINIBROKER_CONTROL"
TOKEN_ENV = "MINIBROKER_CONTROL_TOKEN"
#: A wait's default timeout, seconds.
DEFAULT_WAIT_S = 30.0


@dataclass(frozen=True)
class Call:
    """One control-plane request: what `minibroker ctl` sends."""

    method: str
    path: str
    body: Any = None
    query: dict[str, Any] = field(default_factory=dict)
    #: seconds the broker may hold the request (a wait), None for the client's default
    timeout: float | None = None


def _seg(value: object) -> str:
    """One path segment (a topic, group or fault id), percent-encoded."""
    return quote(str(value), safe="")


def _int_or_name(text: str) -> int | str:
    """An API key or error code given by number or by name."""
    return int(text) if text.lstrip("-").isdigit() else text


def _versions(text: str) -> list[int]:
    low, sep, high = text.partition("-")
    try:
        return [int(low), int(high if sep else low)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN-MAX (e.g. 3-9) or one version") from None


def _where(text: str) -> tuple[str, Any]:
    path, sep, raw = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not PATH=VALUE (e.g. acks=-1)")
    try:
        value: Any = json.loads(raw)  # -1, true, "x", [1, 2] as JSON; anything else a string
    except ValueError:
        value = raw
    return path, value


def _add_matchers(p: argparse.ArgumentParser) -> None:
    m = p.add_argument_group("match (all given must hold)")
    m.add_argument("--api", type=_int_or_name, help="API name as Kafka spells it (Produce, EndTxn) or key")
    m.add_argument("--versions", type=_versions, metavar="MIN-MAX", help="API version range")
    m.add_argument("--topic")
    m.add_argument("--partition", type=int)
    m.add_argument("--client-id")
    m.add_argument("--transactional-id")
    m.add_argument("--group-id")
    m.add_argument(
        "--where",
        type=_where,
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="a field of the decoded request (dotted path; VALUE read as JSON when it parses); repeatable",
    )


def _add_triggers(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("trigger (default: every match)")
    t.add_argument("--count", type=int, help="the first N matches")
    t.add_argument("--every", type=int, help="every Nth match")
    t.add_argument("--probability", type=float, help="each match with this probability (0..1)")
    t.add_argument("--seed", type=int, help="seed of --probability's random numbers")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minibroker ctl",
        description="Drive a running broker's test control plane (minibroker.control.port) over HTTP. "
        "Prints the broker's JSON answer; exit 1 when the broker refuses, 2 on a bad command line.",
    )
    p.add_argument(
        "--control",
        metavar="HOST:PORT",
        default=os.environ.get(CONTROL_ENV),
        help=f"the control plane's address (default ${CONTROL_ENV})",
    )
    p.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"bearer token, minibroker.control.token (default ${TOKEN_ENV})",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    faults = sub.add_parser("faults", help="request faults and observers").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    add = faults.add_parser("add", help="add a fault: error, delay, disconnect and/or throttle")
    _add_matchers(add)
    a = add.add_argument_group("action (combinable)")
    a.add_argument("--error", type=_int_or_name, help="Kafka error name (NOT_LEADER_OR_FOLLOWER) or code")
    a.add_argument("--delay-ms", type=int)
    a.add_argument("--disconnect", choices=["before", "after"], help="close the connection")
    a.add_argument("--throttle-ms", type=int)
    _add_triggers(add)
    observe = faults.add_parser("observe", help="count matching requests without changing them")
    _add_matchers(observe)
    _add_triggers(observe)
    faults.add_parser("list", help="every fault and observer")
    faults.add_parser("show", help="one fault").add_argument("id")
    faults.add_parser("rm", help="remove one fault").add_argument("id")
    faults.add_parser("clear", help="remove every fault and observer")
    wait = faults.add_parser("wait", help="until a fault has fired (an observer answered) N times")
    wait.add_argument("id")
    wait.add_argument("n", type=int)
    wait.add_argument("--timeout", type=float, default=DEFAULT_WAIT_S, help="seconds (default 30)")

    crash_at = sub.add_parser("crash-at", help="arm a crash point: the broker dies as SIGKILL there")
    crash_at.add_argument("point", metavar="POINT", help=f"one of: {', '.join(CRASH_POINTS)}")
    crash_at.add_argument("--key", help="only for this transactional id or topic-partition")
    crash_at.add_argument("--after", type=int, help="txn.after_markers: partitions whose markers are written")
    crash_at.add_argument("--hits", type=int, help="die the Nth time the point is reached (default 1)")
    crash = sub.add_parser("crash", help="armed crash points").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    crash.add_parser("list", help="armed points and what is durable at each")
    crash.add_parser("clear", help="disarm every crash point")

    clock = sub.add_parser("clock", help="the broker's clock").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    clock.add_parser("show", help="mode, wall_ms, offset_ms")
    clock.add_parser("advance", help="move the clock; returns once what fell due has run").add_argument(
        "seconds", type=float
    )

    state = sub.add_parser("state", help="what the broker holds").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    part = state.add_parser("partition", help="one partition: offsets, producers, open transactions")
    part.add_argument("topic")
    part.add_argument("partition", type=int)
    state.add_parser("partitions", help="every partition (of one topic)").add_argument("--topic")
    state.add_parser("transactions", help="transactional ids with their state")
    state.add_parser("groups", help="every group")
    state.add_parser("group", help="one group: state, generation, members").add_argument("group")
    state.add_parser("committed", help="a group's committed offsets").add_argument("group")

    waits = sub.add_parser("wait", help="until the broker's state says so (408 = exit 1 on timeout)")
    waits_sub = waits.add_subparsers(dest="action", required=True, metavar="ACTION")
    wg = waits_sub.add_parser("group", help="until a group is in a state (with N members)")
    wg.add_argument("group")
    wg.add_argument("--state", default="Stable")
    wg.add_argument("--members", type=int)
    wo = waits_sub.add_parser("offset", help="until a group's committed offset reaches OFFSET")
    wo.add_argument("group")
    wo.add_argument("topic")
    wo.add_argument("partition", type=int)
    wo.add_argument("offset", type=int)
    wt = waits_sub.add_parser("transactions-complete", help="until no transaction is open")
    for w in (wg, wo, wt):
        w.add_argument("--timeout", type=float, default=DEFAULT_WAIT_S, help="seconds (default 30)")

    sub.add_parser("reset", help="remove every fault and observer, disarm every crash point")
    sub.add_parser("routes", help="the control plane's routes (GET /v1)")
    return p


def _fault_body(args: argparse.Namespace, *, observe: bool) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key in ("api", "versions", "topic", "partition", "client_id", "transactional_id", "group_id"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    if args.where:
        body["where"] = dict(args.where)
    actions = () if observe else ("error", "delay_ms", "disconnect", "throttle_ms")
    for key in (*actions, "count", "every", "probability", "seed"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    if observe:
        body["observe"] = True
    return body


def build_request(args: argparse.Namespace) -> Call:  # noqa: C901 - one branch per command
    """The request a parsed command line stands for."""
    command, action = args.command, getattr(args, "action", None)
    if command == "faults":
        if action in ("add", "observe"):
            return Call("POST", "/v1/faults", _fault_body(args, observe=action == "observe"))
        if action == "list":
            return Call("GET", "/v1/faults")
        if action == "show":
            return Call("GET", f"/v1/faults/{_seg(args.id)}")
        if action == "rm":
            return Call("DELETE", f"/v1/faults/{_seg(args.id)}")
        if action == "clear":
            return Call("DELETE", "/v1/faults")
        if action == "wait":
            wait = {"n": args.n, "timeout": args.timeout}
            return Call("GET", f"/v1/faults/{_seg(args.id)}/wait", None, wait, args.timeout)
    if command == "crash-at":
        body = {"point": args.point}
        body.update({k: getattr(args, k) for k in ("key", "after", "hits") if getattr(args, k) is not None})
        return Call("POST", "/v1/crash", body)
    if command == "crash":
        return Call("GET" if action == "list" else "DELETE", "/v1/crash")
    if command == "clock":
        if action == "advance":
            return Call("POST", "/v1/clock/advance", {"seconds": args.seconds})
        return Call("GET", "/v1/clock")
    if command == "state":
        if action == "partition":
            return Call("GET", f"/v1/state/partitions/{_seg(args.topic)}/{args.partition}")
        if action == "partitions":
            return Call("GET", "/v1/state/partitions", None, {"topic": args.topic} if args.topic else {})
        if action == "transactions":
            return Call("GET", "/v1/state/transactions")
        if action == "groups":
            return Call("GET", "/v1/state/groups")
        if action == "group":
            return Call("GET", f"/v1/state/groups/{_seg(args.group)}")
        if action == "committed":
            return Call("GET", f"/v1/state/groups/{_seg(args.group)}/offsets")
    if command == "wait":
        query: dict[str, Any] = {"timeout": args.timeout}
        if action == "group":
            query.update(group=args.group, state=args.state)
            if args.members is not None:
                query["members"] = args.members
        elif action == "offset":
            query.update(group=args.group, topic=args.topic, partition=args.partition, offset=args.offset)
        return Call("GET", f"/v1/state/wait/{action}", None, query, args.timeout)
    if command == "reset":
        return Call("POST", "/v1/reset", {})
    if command == "routes":
        return Call("GET", "/v1")
    raise AssertionError(f"unhandled command {command} {action}")  # argparse allows no other


def main(
    argv: list[str] | None = None,
    *,
    client: ControlClient | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run one command; 0 done, 1 the broker refused or is unreachable, 2 bad command line.
    `client` replaces the HTTP client (tests)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, argparse printed why)
        return exc.code if isinstance(exc.code, int) else 2
    if client is None:
        if not args.control:
            parser.print_usage(err)
            print(
                f"minibroker ctl: no control plane address: give --control HOST:PORT or set {CONTROL_ENV}",
                file=err,
            )
            return 2
        client = ControlClient(args.control, args.token)
    call = build_request(args)
    try:
        answer = client.request(call.method, call.path, call.body, query=call.query, timeout=call.timeout)
    except ControlError as exc:
        print(f"minibroker ctl: {exc}", file=err)
        return 1
    print(json.dumps(answer, indent=2), file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
