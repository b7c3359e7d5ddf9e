"""Long-poll wake-ups: fetches (and anything else) waiting for a partition to change.

PartitionLog calls its listeners on the event loop after every append or LSO change. The
LogManager hands every log it opens or creates to `log_opened` (its `on_log_opened`), which
makes that a `notify(topic, partition)`: every waiter registered for the partition wakes.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.storage.log import PartitionLog


class DataWaiters:
    def __init__(self) -> None:
        self._by_partition: dict[tuple[str, int], set[asyncio.Future[None]]] = {}
        #: Set at shutdown: parked waiters are woken and new waits return at once, so long-polls
        #: answer with what they have instead of holding the stop for up to max_wait_ms.
        self.closed = False

    def log_opened(self, topic: str, partition: int, plog: PartitionLog) -> None:
        """A log was opened (startup) or created (a new topic or partition): its appends and
        LSO changes wake the partition's waiters."""
        plog.add_listener(functools.partial(self.notify, topic, partition))

    def close(self) -> None:
        self.closed = True
        self.notify_all()

    def notify(self, topic: str, partition: int) -> None:
        waiters = self._by_partition.pop((topic, partition), None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def notify_all(self) -> None:
        for key in list(self._by_partition):
            self.notify(*key)

    async def wait(self, keys: list[tuple[str, int]], timeout_s: float) -> bool:
        """Wait until one of `keys` changes or the timeout passes; True if woken by a change."""
        if timeout_s <= 0 or self.closed:
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for key in keys:
            self._by_partition.setdefault(key, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            for key in keys:
                waiters = self._by_partition.get(key)
                if waiters is not None:
                    waiters.discard(fut)
                    if not waiters:
                        del self._by_partition[key]
