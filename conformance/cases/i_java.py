"""Client scenarios with Apache Kafka's Java client (kafka-clients 4.4.0, from the reference
Kafka's jars): conformance/java/Scenarios.java run in Java's source-file mode against each broker."""

import subprocess
from pathlib import Path

from conformance.cases import case
from conformance.reference_kafka import ensure_jars

SOURCE = Path(__file__).resolve().parents[1] / "java" / "Scenarios.java"
TIMEOUT_S = 180


def run_java(s, scenario: str) -> None:
    libs = ensure_jars()
    done = subprocess.run(["java", "-Xmx256m", "-cp", f"{libs}/*", str(SOURCE), s.bootstrap, scenario],
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    for line in done.stdout.splitlines():
        label, _, value = line.partition("\t")
        s.observe(label, value)
    s.observe("exit-code", done.returncode)


@case("java/admin")
def java_admin(s):
    run_java(s, "admin")


@case("java/produce-consume")
def java_produce_consume(s):
    run_java(s, "produce-consume")


@case("java/transactions")
def java_transactions(s):
    run_java(s, "transactions")
