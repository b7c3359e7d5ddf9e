"""minibroker under comparison, with the configuration both brokers share."""

from __future__ import annotations

from pathlib import Path

from conformance.ports import free_low_port
from minibroker.testing import BrokerProcess

#: Set identically on both brokers so that their answers can be equal.
SHARED_CONFIG = {
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.num.partitions": 1,
    "group.initial.rebalance.delay.ms": 0,
    # KIP-848 groups assign at each change, so a case's answers do not depend on its timing
    "group.consumer.assignment.interval.ms": 0,
}
#: minibroker's own: the KIP-848 keys are served at group.version 1 (finalized by default in
#: Kafka 4.4)
MINIBROKER_CONFIG = {"minibroker.features": "group.version=1"}


class MiniBroker(BrokerProcess):
    """A minibroker process on a fixed port below 32768 (see conformance/ports.py)."""

    def __init__(self, data_dir: Path, shared_config: dict[str, object]):
        super().__init__(data_dir, {**shared_config, **MINIBROKER_CONFIG})
        self.fixed_port = free_low_port()

    def command(self) -> list[str]:
        cmd = super().command()
        cmd[cmd.index("--port") + 1] = str(self.fixed_port)
        return cmd

    def log_tail(self, lines: int = 40) -> str:
        return super().log_tail(lines)

    def stop(self, timeout: float = 15.0) -> int:  # never raises: cleanup path
        return self.cleanup() or 0
