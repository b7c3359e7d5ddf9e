"""The Python side of the test control plane (docs/control-plane.md).

    with minibroker.testing.broker(control=True, clock="manual") as b:
        b.faults.add(api="Produce", topic="orders", error="NOT_LEADER_OR_FOLLOWER", count=3)
        b.crash_at("txn.after_prepare")
        b.clock.advance(61)
        b.state.partition("orders", 0)

`ControlClient(address, token)` speaks the broker's HTTP JSON API (broker/control/http.py);
`faults`, `clock` and `state` are its parts. A broker started elsewhere is reached by address:
`ControlClient("127.0.0.1:19093")`.
"""

from minibroker.control.client import ControlClient, ControlError, ControlParts

__all__ = ["ControlClient", "ControlError", "ControlParts"]
