"""Where `make jvm` (jvm/fetch.sh) left the JVM jars: Spark's Kafka connector, kafka-clients and
kafka-streams.

Nothing is downloaded here: a missing cache is an error that says which command fetches it."""

from __future__ import annotations

import os
from pathlib import Path

SPARK_VERSION = "4.2.0"  # pinned together with pyspark in pyproject.toml
KAFKA_CLIENT_VERSIONS = ("3.9.2", "4.4.0")  # what Spark 4.2 bundles, and the newest 4.x
KAFKA_STREAMS_VERSION = "4.4.0"


class JarsMissing(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("MINIBROKER_JVM_CACHE", Path.home() / ".cache" / "minibroker" / "jvm"))


def _complete(path: Path, marker: Path) -> Path:
    if not marker.exists():
        raise JarsMissing(
            f"{path} is missing or incomplete: run `make jvm` (jvm/fetch.sh: needs java and mvn)"
        )
    return path


def spark_kafka_jars() -> list[str]:
    """The connector jars for `spark.jars` (those pyspark does not ship itself)."""
    d = cache_dir() / f"spark-kafka-{SPARK_VERSION}"
    _complete(d, d / ".complete")
    return sorted(str(p) for p in d.glob("*.jar"))


def kafka_clients_classpath(version: str) -> str:
    """Classpath of the compiled Java client checks (jvm/clients) against kafka-clients `version`."""
    d = cache_dir() / f"kafka-clients-{version}"
    _complete(d / "lib", d / "lib" / ".complete")
    _complete(d / "classes", d / "classes" / ".source")
    return os.pathsep.join([str(d / "classes"), str(d / "lib" / "*")])


def kafka_streams_classpath() -> str:
    """Classpath of the compiled Kafka Streams application (jvm/streams) and kafka-streams."""
    d = cache_dir() / f"kafka-streams-{KAFKA_STREAMS_VERSION}"
    _complete(d / "lib", d / "lib" / ".complete")
    _complete(d / "classes", d / "classes" / ".source")
    return os.pathsep.join([str(d / "classes"), str(d / "lib" / "*")])
