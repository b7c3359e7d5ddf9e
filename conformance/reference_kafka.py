"""A single-node Apache Kafka (KRaft) started from its Maven jars, as the reference broker.

The jars come from Maven Central through `conformance/kafka/pom.xml` into a cache directory
outside the repository (`$MINIBROKER_CACHE`, default `~/.cache/minibroker`), once, fetched by
`jvm/fetch.sh artifacts` (the one Maven fetch of the project, also behind `make jvm`). Formatting
the storage is a JVM start of its own, so a formatted directory is kept in the cache and copied
for each run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from conformance.ports import free_low_port

HERE = Path(__file__).resolve().parent
FETCH_SCRIPT = HERE.parent / "jvm" / "fetch.sh"
POM = HERE / "kafka" / "pom.xml"
LOG4J = HERE / "kafka" / "log4j2.properties"
KAFKA_VERSION = "4.4.0"
TOOLS_POM = HERE / "kafka-tools" / "pom.xml"
TOOLS_VERSION = "4.3.1"  # kafka-tools 4.4.0 is not on Maven Central
CLUSTER_ID = "bWluaWJyb2tlci1jb25mb3Jt"  # any 22-char base64 uuid; ids are normalised anyway

JVM_FLAGS = [
    "-Xmx1g",
    "-Xms1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]


def cache_dir() -> Path:
    root = os.environ.get("MINIBROKER_CACHE") or Path.home() / ".cache" / "minibroker"
    return Path(root) / f"kafka-{KAFKA_VERSION}"


def ensure_jars() -> Path:
    """Fetch Kafka and its runtime dependencies with Maven unless already cached."""
    return _fetch(POM, cache_dir() / "libs", f"kafka_2.13-{KAFKA_VERSION}.jar")


def tools_jars() -> Path:
    """Apache Kafka's command-line tools (TransactionsCommand, DeleteRecordsCommand,
    LogDirsCommand, kafka.admin.ConfigCommand) with their dependencies, unless already cached."""
    libs = cache_dir().parent / f"kafka-tools-{TOOLS_VERSION}" / "libs"
    return _fetch(TOOLS_POM, libs, f"kafka-tools-{TOOLS_VERSION}.jar")


def client_jars(version: str) -> Path:
    """kafka-clients `version` with its dependencies, as `make jvm` (jvm/fetch.sh) caches them for
    the Java client tests; one fetch serves both."""
    root = os.environ.get("MINIBROKER_JVM_CACHE") or Path.home() / ".cache" / "minibroker" / "jvm"
    libs = Path(root) / f"kafka-clients-{version}" / "lib"
    if not (libs / ".complete").exists():
        raise RuntimeError(f"kafka-clients {version} is not in {libs}: run `make jvm` first")
    return libs


def _fetch(pom: Path, libs: Path, expected_jar: str, *properties: str) -> Path:
    """The runtime dependencies of `pom` in `libs`, fetched by jvm/fetch.sh unless cached."""
    if (libs / ".complete").exists():
        return libs
    done = subprocess.run(
        ["bash", str(FETCH_SCRIPT), "artifacts", str(pom), str(libs), expected_jar, *properties], timeout=900
    )
    if done.returncode != 0:  # jvm/fetch.sh said why on stderr (no java/mvn, no such jar)
        raise RuntimeError(
            f"jvm/fetch.sh could not fetch {expected_jar} into {libs} "
            f"(exit {done.returncode}; see its message above)"
        )
    return libs


def server_properties(port: int, controller_port: int, log_dir: Path, shared: dict[str, object]) -> str:
    props = {
        "node.id": 1,
        "process.roles": "broker,controller",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "log.dirs": str(log_dir),
        "offsets.topic.replication.factor": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
        # Kafka's retention check first runs this long after start (30 s by default) and would
        # delete the rolled segments of whatever case runs then: the cases' fixed past timestamps
        # make Kafka roll a segment per batch. No case tests retention deleting on the reference.
        "log.initial.task.delay.ms": 3_600_000,
        **shared,
    }
    return "".join(f"{k}={_prop(v)}\n" for k, v in props.items())


def _prop(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


class ReferenceKafka:
    """One Kafka process on `workdir`; `start()` blocks until its listener accepts TCP."""

    def __init__(self, workdir: Path, shared_config: dict[str, object]):
        self.workdir = Path(workdir)
        self.shared_config = shared_config
        self.port = free_low_port()
        self.controller_port = free_low_port(exclude={self.port})
        self.proc: subprocess.Popen | None = None
        self.log_path = self.workdir / "kafka-stdout.log"

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.port

    def _java(self, libs: Path, main: str, *args: str, logs_dir: Path) -> list[str]:
        return [
            "java",
            *JVM_FLAGS,
            f"-Dlog4j2.configurationFile={LOG4J}",
            f"-Dkafka.logs.dir={logs_dir}",
            "-cp",
            f"{libs}/*",
            main,
            *args,
        ]

    def _formatted_template(self, libs: Path) -> Path:
        """A storage directory formatted once (StorageTool is a slow JVM start), then reused."""
        template = cache_dir() / f"formatted-{CLUSTER_ID}"
        if (template / "meta.properties").exists():
            return template
        tmp = cache_dir() / f"formatting-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        props = tmp / "format.properties"
        # Formatting records the controller's identity only; ports here do not matter later.
        props.write_text(server_properties(9, 10, tmp / "data", {}))
        subprocess.run(
            self._java(
                libs,
                "kafka.tools.StorageTool",
                "format",
                "--standalone",
                "-t",
                CLUSTER_ID,
                "-c",
                str(props),
                logs_dir=tmp,
            ),
            check=True,
            timeout=300,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        shutil.rmtree(template, ignore_errors=True)
        os.replace(tmp / "data", template)
        shutil.rmtree(tmp, ignore_errors=True)
        return template

    def start(self, timeout: float = 240.0, *, wait: bool = True) -> None:
        """`wait=False` returns right after the JVM is launched (`launched_at`, a
        time.perf_counter() value, says when), for callers that time startup themselves."""
        libs = ensure_jars()
        template = self._formatted_template(libs)
        data = self.workdir / "kafka-data"
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(template, data)
        props = self.workdir / "server.properties"
        props.write_text(server_properties(self.port, self.controller_port, data, self.shared_config))
        out = open(self.log_path, "wb")
        self.launched_at = time.perf_counter()
        self.proc = subprocess.Popen(
            self._java(libs, "kafka.Kafka", str(props), logs_dir=self.workdir),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out.close()
        if not wait:
            return
        from conformance.wire import wait_until_serving  # noqa: PLC0415 - avoids a cycle

        wait_until_serving(self.address, self.proc, timeout, self.log_path)

    def stop(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def log_tail(self, lines: int = 40) -> str:
        text = ""
        for path in (self.log_path, self.workdir / "server.log"):
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                text += f"--- {path}\n" + "\n".join(tail) + "\n"
        return text
