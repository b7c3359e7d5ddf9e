"""The test control plane: faults, crash points, a clock tests move, and the broker's state.

Off unless `minibroker.control.port` is set; then `Broker.control` is a ControlPlane and every
request goes through `control.faults.handle` (broker/connection.py: one `is None` test per request
when off). Every surface does the same things through this object: the HTTP JSON API
(broker/control/http.py, for tests in any language and `minibroker ctl`), and through it the
Python API of `minibroker.testing` and the pytest fixtures (minibroker/control/).

One module per part, each with the HTTP routes it answers (`ROUTES`):
- faults.py: request faults (error, delay, disconnect, throttle) and observers, with triggers;
- crash.py: the named crash points of common/faults.py, armed at run time;
- clock.py: the controlled clock (manual, or wall time plus an offset) and what falls due;
- state.py: partitions, producers, transactions, groups and committed offsets, and waits on them.

Everything runs on the broker's event loop; the HTTP server's threads only parse and hand over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from minibroker.broker.config import BrokerConfig
    from minibroker.broker.control.clock import ClockControl
    from minibroker.broker.control.faults import RequestFaults
    from minibroker.broker.control.http import ControlServer
    from minibroker.broker.state import Broker

__all__ = ["ControlPlane", "control_token_problem"]

log = structlog.get_logger("minibroker.control")


class ControlPlane:
    """What the control plane changes and reads of one broker. Built by the Broker when
    `minibroker.control.port` is set; the HTTP server starts with the broker (start/stop)."""

    def __init__(self, broker: Broker, config: BrokerConfig) -> None:
        from minibroker.broker.control.clock import ClockControl  # noqa: PLC0415 - only when on
        from minibroker.broker.control.faults import RequestFaults  # noqa: PLC0415

        self.broker = broker
        self.host: str = config["minibroker.control.host"]
        self.port: int = config["minibroker.control.port"]
        self.token: str = config["minibroker.control.token"]
        self.faults: RequestFaults = RequestFaults(broker.clock)
        self.clock: ClockControl = ClockControl(broker)
        self._server: ControlServer | None = None

    @property
    def bound_port(self) -> int:
        return self._server.port if self._server is not None else 0

    async def start(self) -> None:
        from minibroker.broker.control.http import ControlServer  # noqa: PLC0415

        self._server = ControlServer(self, self.host, self.port, self.token)
        await self._server.start()
        log.info(
            "control endpoint ready",
            host=self.host,
            port=self._server.port,
            clock=self.clock.mode,
            token_required=bool(self.token),
        )

    async def stop(self) -> None:
        self.faults.close()  # parked requests and waiters answered now
        if self._server is not None:
            await self._server.stop()
            self._server = None

    def reset(self) -> None:
        """What a test leaves behind, undone: faults and observers removed, crash points disarmed
        (the clock stays where it is: time does not go back)."""
        self.faults.clear()
        self.broker.faults.disarm()


def control_token_problem(config: BrokerConfig, authenticates: bool) -> str | None:
    """Why this configuration may not serve the control plane, or None: a broker whose listeners
    authenticate clients must not let an unauthenticated HTTP caller crash it or read its state."""
    if config["minibroker.control.port"] is None:
        if config["minibroker.control.clock"] != "system":
            return (
                f"minibroker.control.clock={config['minibroker.control.clock']} needs the control "
                "plane (minibroker.control.port) to move the clock"
            )
        return None
    if authenticates and not config["minibroker.control.token"]:
        return (
            "minibroker.control.port on a broker whose listeners authenticate clients needs "
            "minibroker.control.token (every control request must then carry it)"
        )
    return None
