"""python -m minibroker.pipelines {generate,job,verify,demo} ... (each with --help)."""

from __future__ import annotations

import argparse
import json
import sys


def _kafka_options(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--kafka-option {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def generate(argv: list[str]) -> int:
    from minibroker.pipelines.generator import GeneratorConfig, OrderGenerator

    d = GeneratorConfig()
    p = argparse.ArgumentParser(
        prog="python -m minibroker.pipelines generate",
        description="Write order events with transactional producers.",
    )
    p.add_argument("--bootstrap-servers", default=d.bootstrap)
    p.add_argument("--topic", default=d.topic)
    p.add_argument("--partitions", type=int, default=d.partitions, help="when the topic is created")
    p.add_argument("--orders", type=int, default=d.orders, help="events in all (valid and malformed)")
    p.add_argument("--producers", type=int, default=d.producers)
    p.add_argument("--txn-size", type=int, default=d.txn_size)
    p.add_argument("--abort-ratio", type=float, default=d.abort_ratio)
    p.add_argument("--malformed-ratio", type=float, default=d.malformed_ratio)
    p.add_argument("--customers", type=int, default=d.customers)
    p.add_argument("--days", type=int, default=d.days, help="order timestamps spread over this many days")
    p.add_argument("--start-date", default=d.start_date)
    p.add_argument("--rate", type=float, default=d.rate, help="events/s over all producers (0: unlimited)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--no-fence", action="store_true", help="skip the second-instance fencing episode")
    p.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args(argv)
    config = GeneratorConfig(
        bootstrap=a.bootstrap_servers,
        topic=a.topic,
        partitions=a.partitions,
        orders=a.orders,
        producers=a.producers,
        txn_size=a.txn_size,
        abort_ratio=a.abort_ratio,
        malformed_ratio=a.malformed_ratio,
        customers=a.customers,
        days=a.days,
        start_date=a.start_date,
        rate=a.rate,
        seed=a.seed,
        fence=not a.no_fence,
        kafka_options=_kafka_options(a.kafka_option),
    )
    report = OrderGenerator(config).run()
    print(json.dumps(report.as_dict()))
    return 0


def verify(argv: list[str]) -> int:
    from minibroker.pipelines.job import session
    from minibroker.pipelines.verifier import VerificationFailed
    from minibroker.pipelines.verifier import verify as run_verify

    p = argparse.ArgumentParser(
        prog="python -m minibroker.pipelines verify",
        description="Compare the pipeline's outputs with its committed input.",
    )
    p.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    p.add_argument("--input-topic", default="order-events")
    p.add_argument("--totals-topic", default="customer-totals")
    p.add_argument("--output", required=True)
    p.add_argument("--dead-letter", required=True)
    p.add_argument(
        "--expect-committed", type=int, default=None, help="committed event count the generator reported"
    )
    p.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args(argv)
    spark = session(app_name="minibroker-orders-verifier")
    spark.sparkContext.setLogLevel("WARN")
    try:
        summary = run_verify(
            spark,
            a.bootstrap_servers,
            a.output,
            a.dead_letter,
            a.input_topic,
            a.totals_topic,
            a.expect_committed,
            _kafka_options(a.kafka_option),
        )
    except VerificationFailed as exc:
        print(f"MISMATCH: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary))
    return 0


def job(argv: list[str]) -> int:
    from minibroker.pipelines.job import main

    return main(argv)


def demo(argv: list[str]) -> int:
    from minibroker.pipelines.demo import main

    return main(argv)


COMMANDS = {"generate": generate, "job": job, "verify": verify, "demo": demo}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
