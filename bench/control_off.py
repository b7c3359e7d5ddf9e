"""The test control plane costs nothing when off: broker CPU on the Produce path with it off and
with it on but holding no fault, in the same run.

    python -m bench.control_off [--records 10] [--batches 2000] [--rounds 9]

Two fresh brokers side by side: one as shipped (no `minibroker.control.port`: the request hook in
broker/connection.py `Connection._serve` is one `is None` test), one with the control plane on
(`minibroker.control.port=0`) and no fault or observer, so every request goes through
`control.faults.handle`. Each round sends the same pipelined Produce load (bench/produce_path.py:
raw sockets, one idempotent batch of `--records` records per request, acks=-1) to one broker and
then the other, the order alternating from round to round so that a change of load on the machine
hits both alike. Small batches make the per-request work (where the hook is) a large share of the
CPU. Printed: each broker's median CPU per request and per record, the median of the paired
(on - off) differences, and the noise: the interquartile range of those differences and of the
off broker's own rounds. "On" does strictly more than "off", so the difference bounds what the
off path can cost. `make bench` runs it after the side-by-side table (bench/__main__.py) and
reports it under the table (bench/report.py).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import ExitStack, contextmanager
from types import SimpleNamespace
from typing import Any

from bench.produce_path import ProduceLoad, broker_with_topic
from bench.targets import cpu_ns

#: the control plane on any free port (testing.broker(control=True) does the same)
CONTROL_ON = ("--set", "minibroker.control.port=0")


@contextmanager
def _loads(records: int) -> Iterator[dict[str, tuple[int, ProduceLoad]]]:
    """Both brokers, each with a topic `t` and a warmed-up idempotent producer: {name: (pid, load)}."""
    with ExitStack() as stack:
        out = {}
        for name, extra in (("off", ()), ("on", CONTROL_ON)):
            proc, s = stack.enter_context(broker_with_topic("t", 1, extra))
            load = ProduceLoad(s, records, 1)
            load.send(load.frames(50))  # warm-up: one-time costs (imports, first segment)
            out[name] = (proc.pid, load)
        yield out


def hook_off_ns(calls: int = 50_000, pairs: int = 41) -> float:
    """What the off path adds to each request, in ns, measured in this process: the line of
    `Connection._serve` that calls the handler (an attribute read and the `is None` test of
    `broker.control` around the same await) against awaiting the handler alone, as the code did
    before the control plane. Timed in `pairs` back-to-back pairs, the order alternating; the
    median of the pairs' differences, so a change of load on the machine hits both sides alike."""

    class Stub:  # what the line reads: self.broker.control, self._run_handler
        broker = SimpleNamespace(control=None)

        async def _run_handler(self, ctx: object, request: object) -> object:
            return request

        async def _through_control(self, ctx: object, request: object) -> object:
            raise AssertionError("the control plane is off")

    stub = Stub()

    async def through_hook() -> None:
        for _ in range(calls):
            # as in broker/connection.py Connection._serve
            control = stub.broker.control
            await (stub._run_handler(None, None) if control is None else stub._through_control(None, None))

    async def direct() -> None:
        for _ in range(calls):
            await stub._run_handler(None, None)

    def timed(fn: Callable[[], Coroutine[Any, Any, None]], loop: asyncio.AbstractEventLoop) -> float:
        t0 = time.perf_counter_ns()
        loop.run_until_complete(fn())
        return (time.perf_counter_ns() - t0) / calls

    loop = asyncio.new_event_loop()
    try:
        diffs = []
        for i in range(pairs):
            if i % 2 == 0:
                hook = timed(through_hook, loop)
                diffs.append(hook - timed(direct, loop))
            else:
                plain = timed(direct, loop)
                diffs.append(timed(through_hook, loop) - plain)
    finally:
        loop.close()
    return statistics.median(diffs)


def _iqr(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


def measure(records: int = 10, batches: int = 500, rounds: int = 31) -> dict[str, Any]:
    """The figures, as `make bench` stores them under results["control_plane"] (us)."""
    per_request: dict[str, list[float]] = {"off": [], "on": []}
    with _loads(records) as loads:
        for r in range(rounds):
            order = ("off", "on") if r % 2 == 0 else ("on", "off")
            for name in order:
                pid, load = loads[name]
                frames = load.frames(batches)
                cpu0 = cpu_ns(pid)
                load.send(frames)
                per_request[name].append((cpu_ns(pid) - cpu0) / batches / 1000)
    diffs = [on - off for on, off in zip(per_request["on"], per_request["off"], strict=True)]
    off, on = statistics.median(per_request["off"]), statistics.median(per_request["on"])
    return {
        "records_per_request": records,
        "requests_per_round": batches,
        "rounds": rounds,
        "off_us_per_request": off,
        "on_us_per_request": on,
        "off_us_per_record": off / records,
        "on_us_per_record": on / records,
        "diff_us_per_request": statistics.median(diffs),
        "diff_pct": statistics.median(diffs) / off * 100,
        "off_iqr_us_per_request": _iqr(per_request["off"]),
        "on_iqr_us_per_request": _iqr(per_request["on"]),
        "diff_iqr_us_per_request": _iqr(diffs),
        "hook_off_ns": hook_off_ns(),
        "off_rounds": per_request["off"],
        "on_rounds": per_request["on"],
    }


def markdown(fig: dict) -> list[str]:
    """The report's lines (bench/report.py)."""
    return [
        f"Control plane off against on with no fault (`python -m bench.control_off`: Produce of "
        f"{fig['records_per_request']} x 100 B records per request, {fig['requests_per_round']} "
        f"requests per round, {fig['rounds']} alternating rounds, two brokers in the same run):",
        "",
        "| broker CPU (us) | control plane off | on, no fault | on - off (median of pairs) "
        "| noise: IQR of the pairs | IQR of the off rounds |",
        "|---|---|---|---|---|---|",
        f"| per Produce request | {fig['off_us_per_request']:.2f} | {fig['on_us_per_request']:.2f} | "
        f"{fig['diff_us_per_request']:+.2f} ({fig['diff_pct']:+.1f}%) | "
        f"{fig['diff_iqr_us_per_request']:.2f} | {fig['off_iqr_us_per_request']:.2f} |",
        f"| per record | {fig['off_us_per_record']:.3f} | {fig['on_us_per_record']:.3f} | "
        f"{fig['diff_us_per_request'] / fig['records_per_request']:+.3f} | "
        f"{fig['diff_iqr_us_per_request'] / fig['records_per_request']:.3f} | "
        f"{fig['off_iqr_us_per_request'] / fig['records_per_request']:.3f} |",
        "",
        f"What the off path adds to a request, timed in-process (`Connection._serve`'s handler call) "
        f"(median of 41 alternating pairs of 50,000 calls against awaiting the handler directly): "
        f"{fig['hook_off_ns']:.0f} ns.",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.control_off", description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10, help="records per Produce request")
    ap.add_argument("--batches", type=int, default=500, help="requests per round")
    ap.add_argument("--rounds", type=int, default=31, help="rounds per broker (alternating)")
    args = ap.parse_args(argv)
    fig = measure(args.records, args.batches, args.rounds)
    for name in ("off", "on"):
        print(f"{name:>3}: us per request, by round:", " ".join(f"{x:.2f}" for x in fig[f"{name}_rounds"]))
    print("\n".join(markdown(fig)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
