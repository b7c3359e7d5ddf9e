"""`minibroker` / `python -m minibroker`: parse the command line, run the broker until a signal."""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import sys
from collections.abc import Callable

import structlog
from minibroker.broker import logging as broker_logging
from minibroker.broker.config import BrokerConfig, ConfigError, parse_listener_entry, read_properties_file
from minibroker.broker.profiles import PROFILES, profile_defaults
from minibroker.coordinator.producer_ids import ProducerIdStateError
from minibroker.storage.errors import KafkaStorageError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="minibroker",
        description="A single-process Kafka-compatible broker.",
        epilog=(
            "other commands:\n"
            "  minibroker dump [--json] [--print-data] [--topic T] DATA_DIR\n"
            "                        print a data dir's topics, segments, producers, groups and\n"
            "                        transactions (offline; see `minibroker dump --help`)\n"
            "  minibroker ctl [--control HOST:PORT] COMMAND ...\n"
            "                        a running broker's test control plane: faults, crash points,\n"
            "                        clock, state (see `minibroker ctl --help`)\n"
            "\n"
            "exit codes: 0 stopped on SIGTERM/SIGINT (cleanly, or on a full disk with a warning\n"
            "naming what it could not write: the next start recovers the logs); 1 cannot start or\n"
            "cannot go on (port in use, data dir locked by another broker or unreadable, disk\n"
            "error); 2 invalid configuration or command line"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_PrintVersion, nargs=0, help="print the version and exit")
    p.add_argument("--host", help="bind address (default from listeners: 127.0.0.1)")
    p.add_argument("--port", type=int, help="bind port; 0 picks a free one (default 9092)")
    p.add_argument("--data-dir", help="data directory (log.dirs; default ./data)")
    p.add_argument("--config", help="Kafka-style properties file")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one property")
    p.add_argument("--port-file", help="write the bound port here once ready")
    p.add_argument("--log-level", default="info", choices=sorted(broker_logging.LEVELS))
    p.add_argument("--log-format", default="console", choices=["console", "json"])
    p.add_argument(
        "--profile",
        default="default",
        choices=sorted(PROFILES),
        help="property defaults for a use: 'test' for test suites (see docs/running.md)",
    )
    return p.parse_args(argv)


class _PrintVersion(argparse.Action):
    """--version, looked up only when asked (importlib.metadata would add to every start)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

        try:
            found = version("minibroker")
        except PackageNotFoundError:  # run from a checkout that was never installed
            found = "unknown (not installed)"
        print(f"minibroker {found}")  # stdout, as argparse's own version action
        parser.exit()


def build_config(args: argparse.Namespace) -> BrokerConfig:
    """The configuration from the profile, --config, flags and --set; every problem in them is
    reported at once (one ConfigError)."""
    values: dict[str, str] = profile_defaults(args.profile)
    if args.config:
        values.update(read_properties_file(args.config))
    problems: list[str] = []
    config = BrokerConfig()
    config.update(values, problems)
    if args.data_dir:
        config.set("log.dirs", args.data_dir)
    if args.host is not None or args.port is not None:  # they override the first client listener only
        entries = [entry.strip() for entry in config["listeners"].split(",") if entry.strip()]
        try:
            parsed = [parse_listener_entry(entry, "listeners") for entry in entries]
        except ConfigError as exc:
            problems.extend(exc.problems)
        else:
            controllers = config.controller_listener_names()
            index = next((i for i, (name, _, _) in enumerate(parsed) if name not in controllers), 0)
            name, host, port = parsed[index] if parsed else ("PLAINTEXT", "127.0.0.1", 9092)
            host = args.host if args.host is not None else host
            port = args.port if args.port is not None else port
            entries[index : index + 1] = [f"{name}://{host}:{port}"]
            config.set("listeners", ",".join(entries))
    overrides: dict[str, str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            problems.append(f"--set {item!r}: expected key=value")
        else:
            overrides[key.strip()] = value
    config.update(overrides, problems)
    if problems:
        raise ConfigError(*problems)
    return config


def write_port_file(path: str, port: int) -> None:
    # Renamed into place, so a reader sees all of it or nothing. Not fsynced: it is a readiness
    # signal for the processes on this machine, meaningless after a crash, and the fsync would
    # delay the first request (it runs before the event loop serves anything).
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


class _Phase:
    """How far the run got, so an error is reported for what it interrupted."""

    started = False  # ready: serving, port file written
    stopping = False  # SIGTERM/SIGINT received (or the start failed after the broker was up)


async def serve(config: BrokerConfig, port_file: str | None, phase: _Phase | None = None) -> None:
    from minibroker.broker.state import Broker  # noqa: PLC0415 - imported by main, after parse_args

    phase = phase if phase is not None else _Phase()
    broker = Broker(config)
    # Handlers first: a SIGTERM that arrives as soon as the port file exists (a test harness
    # stopping a broker it just started) must stop cleanly, not kill the process.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await broker.start()
    try:
        if port_file:
            write_port_file(port_file, broker.bound_port)
        phase.started = True
        await stop.wait()
    finally:  # also when the port file cannot be written: close the logs cleanly
        phase.stopping = True
        await broker.stop()


def tune_malloc() -> None:
    """Keep glibc from returning the heap's top to the kernel after every large request.

    A Produce frame of 100 KB to 1 MB that arrives in pieces is assembled in one buffer and freed
    once answered. With glibc's defaults (trim above 128 KiB of free top, mmap from 128 KiB) each
    such frame grew and shrank the heap: two brk calls and fresh zeroed pages per request, about
    0.08 us of the 0.45 us of broker CPU per 100 B record (`python -m bench.produce_path`: 329 brk
    calls for 300 requests, 0 with these settings; 0.36-0.37 us/record). Frames up to 1 MiB stay on
    the heap, at most 2 MiB of free heap is kept (the idle and after-load RSS figures of
    `make bench` are unchanged). The call is in the compiled record walk (storage/_record_walk.c,
    loaded at startup anyway; ctypes would cost 0.4 MB of idle RSS); nothing is done without it
    or on other C libraries."""
    from minibroker.storage.compiled_walk import tune_malloc as mallopt  # noqa: PLC0415 - startup only

    if mallopt is not None:
        mallopt(1 << 20, 2 << 20)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv

    if argv[:1] == ["dump"]:  # `minibroker dump DIR`: offline inspection, no broker started
        gc.enable()  # paused by minibroker/__main__.py for the imports
        from minibroker.broker.dump import main as dump_main

        return dump_main(argv[1:])
    if argv[:1] == ["ctl"]:  # `minibroker ctl ...`: a running broker's control plane over HTTP
        gc.enable()
        from minibroker.control.ctl import main as ctl_main  # noqa: PLC0415

        return ctl_main(argv[1:])
    args = parse_args(argv)
    broker_logging.configure(args.log_level, args.log_format)
    log = structlog.get_logger("broker")
    try:
        config = build_config(args)
    except ConfigError as exc:
        log.error("invalid configuration", problem=str(exc))
        return 2
    config.log_ignored(log)
    tune_malloc()
    runner: Callable[..., object] = asyncio.run
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        pass
    import minibroker.broker.state  # noqa: F401, PLC0415 - the broker's code; after parse_args: --help stays fast

    gc.enable()  # every start-up import is done: minibroker/__main__.py paused the collector for them
    phase = _Phase()
    try:
        runner(serve(config, args.port_file, phase))
    except ConfigError as exc:
        log.error("invalid configuration", problem=str(exc))
        return 2
    except (OSError, KafkaStorageError, ProducerIdStateError) as exc:
        if not phase.started:
            log.error("cannot start", problem=str(exc))
        elif phase.stopping:
            # Broker.stop reports what a full disk keeps it from writing and returns; this is
            # anything else that broke the stop
            log.error(
                "the stop could not finish",
                problem=str(exc),
                next_start="recovers the logs from the data dir, as after a crash",
            )
        else:
            log.error("cannot go on", problem=str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
