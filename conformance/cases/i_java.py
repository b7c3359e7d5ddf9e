"""Client scenarios with Apache Kafka's Java client: kafka-clients 4.4.0 (the reference Kafka's
jars) and 3.9.2 (what Spark 4.2 ships, fetched by `make jvm`), running
conformance/java/Scenarios.java in Java's source-file mode against each broker."""

import subprocess
from pathlib import Path

from conformance.cases import case
from conformance.reference_kafka import client_jars, ensure_jars

SOURCE = Path(__file__).resolve().parents[1] / "java" / "Scenarios.java"
TIMEOUT_S = 180


OLD_CLIENT = "3.9.2"


def run_java(s, scenario: str, old_client: bool = False) -> None:
    libs = client_jars(OLD_CLIENT) if old_client else ensure_jars()
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{libs}/*",
            str(SOURCE),
            s.bootstrap,
            scenario,
            "jv39" if old_client else "jv",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
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


@case("java-3.9/admin")
def java39_admin(s):
    run_java(s, "admin", old_client=True)


@case("java-3.9/produce-consume")
def java39_produce_consume(s):
    run_java(s, "produce-consume", old_client=True)


@case("java-3.9/transactions")
def java39_transactions(s):
    run_java(s, "transactions", old_client=True)
