"""Regenerates broker/kafka_properties.py, the names of every property Apache Kafka's broker knows.

The names come from Kafka itself: `java/BrokerPropertyNames.java` prints
`kafka.server.KafkaConfig.configDef().names()`, run in Java's source-file mode with the reference
Kafka's jars (reference_kafka.ensure_jars: `jvm/fetch.sh artifacts`, cached in
~/.cache/minibroker/kafka-<version>/libs). The names Kafka's stock `config/server.properties` sets
(tests/fixtures/kafka-server.properties) are added, so that file starts minibroker whatever the
ConfigDef says.

    .venv/bin/python -m conformance.kafka_properties            # rewrite broker/kafka_properties.py
    .venv/bin/python -m conformance.kafka_properties --check    # exit 1 if the committed list differs

Rerun after changing KAFKA_VERSION in reference_kafka.py (tests/acceptance/test_kafka_properties.py
fails until the committed list matches the jars).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.reference_kafka import KAFKA_VERSION, ensure_jars

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOURCE = HERE / "java" / "BrokerPropertyNames.java"
STOCK_FILE = REPO / "tests" / "fixtures" / "kafka-server.properties"
TARGET = REPO / "broker" / "kafka_properties.py"


def kafka_names(libs: Path | None = None) -> list[str]:
    """The broker property names Kafka's jars define, sorted."""
    libs = libs or ensure_jars()
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", f"{libs}/*", str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{SOURCE.name} failed (exit {done.returncode}):\n{done.stderr}")
    names = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if len(names) < 100:  # a broken classpath prints nothing useful; never write a short list
        raise RuntimeError(f"{SOURCE.name} printed only {len(names)} names:\n{done.stdout}{done.stderr}")
    return sorted(names)


def stock_names() -> list[str]:
    """The property names Kafka's stock config/server.properties sets."""
    from minibroker.broker.config import read_properties_file  # noqa: PLC0415

    return sorted(read_properties_file(str(STOCK_FILE)))


def render(names: list[str]) -> str:
    body = "".join(f'        "{name}",\n' for name in names)
    return (
        f'"""Every property Apache Kafka {KAFKA_VERSION}\'s broker knows: the names of\n'
        "kafka.server.KafkaConfig.configDef(), plus those its stock config/server.properties sets.\n"
        "\n"
        "Generated from Kafka's own jars by `python -m conformance.kafka_properties`\n"
        "(conformance/java/BrokerPropertyNames.java): do not edit by hand, rerun it.\n"
        '"""\n'
        "\n"
        f'KAFKA_VERSION = "{KAFKA_VERSION}"\n'
        "\n"
        "KAFKA_BROKER_PROPERTIES = frozenset(\n"
        "    {\n"
        f"{body}"
        "    }\n"
        ")\n"
    )


def expected_names() -> list[str]:
    return sorted(set(kafka_names()) | set(stock_names()))


def main(argv: list[str]) -> int:
    text = render(expected_names())
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} differs from Kafka {KAFKA_VERSION}: rerun without --check", file=sys.stderr)
            return 1
        print(f"{TARGET} matches Kafka {KAFKA_VERSION}")
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET}: {text.count(chr(10) + '        ')} names from Kafka {KAFKA_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
