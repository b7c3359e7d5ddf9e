#!/usr/bin/env bash
# The one way JVM artifacts are fetched from Maven Central into a cache outside git. Idempotent:
# a directory holding a `.complete` marker is never fetched again.
#
#   jvm/fetch.sh                 (make jvm) what the Spark and Java tests need, and compile the
#                                Java client checks, into $MINIBROKER_JVM_CACHE (default
#                                ~/.cache/minibroker/jvm):
#     spark-kafka-<spark version>/*.jar      Spark's Kafka connector + jars pyspark lacks
#     kafka-clients-<version>/lib/*.jar       kafka-clients and its dependencies
#     kafka-clients-<version>/classes/        the compiled checks (jvm/clients/src)
#     kafka-streams-<version>/lib/*.jar       kafka-streams and its dependencies (RocksDB, ...)
#     kafka-streams-<version>/classes/        the compiled Streams application (jvm/streams/src)
#   jvm/fetch.sh artifacts POM DIR JAR [-Dname=value...]
#                                the runtime dependencies of POM into DIR, checking that JAR
#                                arrived (conformance/reference_kafka.py: the reference Kafka
#                                and its tools, in ~/.cache/minibroker/kafka-*)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

require() {  # tools...
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "jvm/fetch.sh: '$tool' is not on PATH. The Spark, Java and conformance tests need a" \
           "JDK 17+ and Maven:" >&2
      echo "  Debian/Ubuntu: apt-get install -y openjdk-17-jdk-headless maven" >&2
      exit 1
    fi
  done
}

fetch_artifacts() {  # pom, directory, expected jar ("" for none), extra Maven args...
  local pom="$1" dir="$2" expected="$3"; shift 3
  [ -f "$dir/.complete" ] && return 0
  echo "fetching the runtime dependencies of $pom into $dir" >&2
  rm -rf "$dir"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$dir" "$@"
  if [ -n "$expected" ] && [ ! -f "$dir/$expected" ]; then
    echo "jvm/fetch.sh: Maven did not deliver $expected into $dir" >&2
    exit 1
  fi
  touch "$dir/.complete"
}

if [ "${1:-}" = "artifacts" ]; then
  [ $# -ge 4 ] || { echo "usage: jvm/fetch.sh artifacts POM DIR JAR [-Dname=value...]" >&2; exit 2; }
  shift
  require java mvn
  fetch_artifacts "$@"
  exit 0
fi

cache="${MINIBROKER_JVM_CACHE:-$HOME/.cache/minibroker/jvm}"
spark_version="${SPARK_VERSION:-4.2.0}"
kafka_versions="${KAFKA_CLIENT_VERSIONS:-3.9.2 4.4.0}"
streams_version="${KAFKA_STREAMS_VERSION:-4.4.0}"
require java javac mvn

fetch_artifacts "$here/spark-kafka/pom.xml" "$cache/spark-kafka-$spark_version" \
  "spark-sql-kafka-0-10_2.13-$spark_version.jar" \
  -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2

compile_sources() {  # project (jvm/<project>), cache directory, what (for the message)
  local project="$1" dir="$2" what="$3" src_sum
  src_sum="$(cat "$here/$project"/pom.xml "$here/$project"/src/main/java/minibroker/*.java | sha1sum | cut -c1-12)"
  if [ "$(cat "$dir/classes/.source" 2>/dev/null)" != "$src_sum" ]; then
    echo "compiling $what"
    rm -rf "$dir/classes"
    mkdir -p "$dir/classes"
    javac -nowarn -d "$dir/classes" -cp "$dir/lib/*" "$here/$project"/src/main/java/minibroker/*.java
    echo "$src_sum" > "$dir/classes/.source"
  fi
}

for v in $kafka_versions; do
  dir="$cache/kafka-clients-$v"
  fetch_artifacts "$here/clients/pom.xml" "$dir/lib" "kafka-clients-$v.jar" -Dkafka.version="$v"
  compile_sources clients "$dir" "the Java client checks against kafka-clients $v"
done

dir="$cache/kafka-streams-$streams_version"
fetch_artifacts "$here/streams/pom.xml" "$dir/lib" "kafka-streams-$streams_version.jar" \
  -Dkafka.version="$streams_version"
compile_sources streams "$dir" "the Kafka Streams application against kafka-streams $streams_version"
