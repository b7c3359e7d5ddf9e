"""What the group benches (bench/consumer_groups.py, bench/share_groups.py) share to check that a
broker serves their heartbeat API before measuring it: ApiVersions, the retries while a fresh
broker creates __consumer_offsets, and the text of a refusal."""

from __future__ import annotations

import time
from typing import Any

#: errors a fresh broker answers while its __consumer_offsets is being created
TRANSIENT = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def advertises(conn: Any, api_key: int) -> bool:
    """Whether ApiVersions lists `api_key`."""
    versions = conn.call(18, 3, {"client_software_name": "bench", "client_software_version": "1"})
    return api_key in {k["api_key"] for k in versions["api_keys"]}


def find_coordinator(conn: Any, group_id: str, deadline: float) -> None:
    """FindCoordinator until answered without error or past `deadline` (Kafka creates
    __consumer_offsets on the first one)."""
    while True:
        found = conn.call(10, 1, {"key": group_id, "key_type": 0})
        if int(found["error_code"]) == 0 or time.monotonic() > deadline:
            return
        time.sleep(0.2)


def heartbeat(conn: Any, api_key: int, version: int, request: dict, deadline: float) -> dict:
    """The heartbeat's answer once no longer a TRANSIENT error (or past `deadline`)."""
    while True:
        answer = conn.call(api_key, version, request)
        if int(answer["error_code"]) not in TRANSIENT or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def refusal(api_name: str, answer: dict) -> str | None:
    """None for an answer without error; else "<api_name> answered <ERROR>: <message>"."""
    code = int(answer["error_code"])
    if not code:
        return None
    from minibroker.protocol.errors import ErrorCode  # noqa: PLC0415

    try:
        name = ErrorCode(code).name.upper()
    except ValueError:
        name = str(code)
    return f"{api_name} answered {name}: {answer['error_message'] or 'no message'}"
