#!/usr/bin/env bash
# Fetches (with Maven) the JVM pieces the Spark and Java tests need into a cache directory outside
# git, and compiles the Java client checks. Idempotent: a version already fetched is skipped.
#   $MINIBROKER_JVM_CACHE (default ~/.cache/minibroker/jvm)
#     spark-kafka-<spark version>/*.jar      Spark's Kafka connector + jars pyspark lacks
#     kafka-clients-<version>/lib/*.jar       kafka-clients and its dependencies
#     kafka-clients-<version>/classes/        the compiled checks (jvm/clients/src)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${MINIBROKER_JVM_CACHE:-$HOME/.cache/minibroker/jvm}"
spark_version="${SPARK_VERSION:-4.2.0}"
kafka_versions="${KAFKA_CLIENT_VERSIONS:-3.9.2 4.4.0}"

for tool in java javac mvn; do
  if ! command -v "$tool" >/dev/null; then
    echo "jvm/fetch.sh: '$tool' is not on PATH. The Spark and Java tests need a JDK 17+ and Maven:" >&2
    echo "  Debian/Ubuntu: apt-get install -y openjdk-17-jdk-headless maven" >&2
    exit 1
  fi
done

mvn_copy() {  # pom, output dir, extra args...
  local pom="$1" out="$2"; shift 2
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$out" "$@"
}

spark_dir="$cache/spark-kafka-$spark_version"
if [ ! -f "$spark_dir/.complete" ]; then
  echo "fetching spark-sql-kafka-0-10_2.13:$spark_version into $spark_dir"
  rm -rf "$spark_dir"
  mvn_copy "$here/spark-kafka/pom.xml" "$spark_dir" \
    -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2
  touch "$spark_dir/.complete"
fi

src_sum="$(cat "$here"/clients/pom.xml "$here"/clients/src/main/java/minibroker/*.java | sha1sum | cut -c1-12)"
for v in $kafka_versions; do
  dir="$cache/kafka-clients-$v"
  if [ ! -f "$dir/lib/.complete" ]; then
    echo "fetching kafka-clients:$v into $dir/lib"
    rm -rf "$dir/lib"
    mvn_copy "$here/clients/pom.xml" "$dir/lib" -Dkafka.version="$v"
    touch "$dir/lib/.complete"
  fi
  if [ "$(cat "$dir/classes/.source" 2>/dev/null)" != "$src_sum" ]; then
    echo "compiling the Java client checks against kafka-clients $v"
    rm -rf "$dir/classes"
    mkdir -p "$dir/classes"
    javac -nowarn -d "$dir/classes" -cp "$dir/lib/*" "$here"/clients/src/main/java/minibroker/*.java
    echo "$src_sum" > "$dir/classes/.source"
  fi
done
