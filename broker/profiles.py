"""Named sets of property defaults (`--profile test`), applied beneath the config file and --set.

Kafka's defaults suit production; a test suite wants rebalances without the 3 s wait and prompt
clean-up of what a failed test leaves open. A profile only changes defaults: any property the user
sets (properties file or --set) still wins. Each value says why it is there; docs/running.md lists them.
"""

from __future__ import annotations

PROFILES: dict[str, dict[str, str]] = {
    "default": {},
    "test": {
        # The first JoinGroup of an empty group completes at once instead of waiting 3 s for
        # more members (what testcontainers and Redpanda's dev mode do too).
        "group.initial.rebalance.delay.ms": "0",
        # A transaction a crashed test left open is aborted within ~1 s of its
        # transaction.timeout.ms instead of up to 10 s later, so read_committed readers unblock.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        # 16 MiB segments instead of 1 GiB: tests that write a lot exercise segment rolls and
        # leave less behind in temporary directories. Limits nothing a client can observe.
        "log.segment.bytes": "16777216",
        # A test that sets retention.ms / retention.bytes, calls deleteRecords or writes to a
        # compacted topic sees the effect within ~1 s instead of 5 min (retention) / 15 s.
        "log.retention.check.interval.ms": "1000",
        "log.cleaner.backoff.ms": "1000",
    },
}


def profile_defaults(name: str) -> dict[str, str]:
    try:
        return dict(PROFILES[name])
    except KeyError:
        raise ValueError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})") from None
