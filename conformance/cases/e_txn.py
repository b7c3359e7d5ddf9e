"""Idempotent and transactional producers: InitProducerId, the transaction APIs, inspection."""

from minibroker.protocol.records import build_batch

from conformance.cases import case, versions
from conformance.cases.c_data import FETCH, LIST_OFFSETS, PRODUCE, fetch_req, list_offsets_req, produce_req
from conformance.cases.d_groups import FIND_COORDINATOR, fetch_offsets

INIT_PID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 28
DESCRIBE_PRODUCERS, DESCRIBE_TXNS, LIST_TXNS = 61, 65, 66
TS = 1_700_000_000_000


def init_pid(s, label, v, tid, timeout_ms=60000, pid=-1, epoch=-1):
    return s.check(
        label,
        INIT_PID,
        v,
        {
            "transactional_id": tid,
            "transaction_timeout_ms": timeout_ms,
            "producer_id": pid,
            "producer_epoch": epoch,
        },
    )


def txn_batch(pid, epoch, seq, n=1):
    return build_batch(
        [(b"k", b"v", [], TS)] * n,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=True,
    )


def add_partitions(s, label, v, tid, pid, epoch, topic, parts):
    return s.check(
        label,
        ADD_PARTITIONS,
        v,
        {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": parts}],
        },
    )


def end_txn(s, label, v, tid, pid, epoch, commit_):
    return s.check(
        label,
        END_TXN,
        v,
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit_},
    )


@case("init_producer_id/idempotent")
def init_idempotent(s):
    for v in versions(INIT_PID):
        init_pid(s, f"v{v}", v, None)
    init_pid(s, "v4/with-unknown-pid", 4, None, pid=12345, epoch=0)


@case("init_producer_id/transactional")
def init_transactional(s):
    for v in versions(INIT_PID):
        tid = f"ip-{v}"
        s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
        first = init_pid(s, f"v{v}/first", v, tid)
        init_pid(s, f"v{v}/again", v, tid)
        if v >= 3:
            init_pid(
                s, f"v{v}/wrong-epoch", v, tid, pid=first["producer_id"], epoch=first["producer_epoch"] + 7
            )
    init_pid(s, "timeout-too-large", 4, "ip-big", timeout_ms=10**9)
    init_pid(s, "timeout-zero", 4, "ip-zero", timeout_ms=0)
    init_pid(s, "empty-id", 4, "")


@case("transactions/flow")
def txn_flow(s):
    s.create_topic("tx-topic", 2)
    for v in versions(END_TXN):
        tid = f"tx-{v}"
        s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
        r = s.call(
            INIT_PID,
            4,
            {
                "transactional_id": tid,
                "transaction_timeout_ms": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        pid, epoch = r["producer_id"], r["producer_epoch"]
        av = min(v, 3)
        add_partitions(s, f"v{v}/add-v{av}", av, tid, pid, epoch, "tx-topic", [0, 1])
        add_partitions(s, f"v{v}/add-unknown-topic", av, tid, pid, epoch, "tx-missing", [0])
        add_partitions(s, f"v{v}/add-bad-epoch", av, tid, pid, epoch + 3, "tx-topic", [0])
        s.check(f"v{v}/produce", PRODUCE, 9, produce_req("tx-topic", 0, txn_batch(pid, epoch, 0), tid=tid))
        ov = min(v, 4)
        s.check(
            f"v{v}/add-offsets-v{ov}",
            ADD_OFFSETS,
            ov,
            {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": f"txg-{v}"},
        )
        s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [f"txg-{v}"]})
        s.check(
            f"v{v}/txn-offset-commit-v{ov}",
            TXN_OFFSET_COMMIT,
            ov,
            {
                "transactional_id": tid,
                "group_id": f"txg-{v}",
                "producer_id": pid,
                "producer_epoch": epoch,
                "topics": [
                    {
                        "name": "tx-topic",
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}
                        ],
                    }
                ],
            },
        )
        fetch_offsets(s, f"v{v}/offsets-pending", 8, f"txg-{v}", [("tx-topic", [0])], require_stable=True)
        s.check(f"v{v}/describe", DESCRIBE_TXNS, 0, {"transactional_ids": [tid]})
        end_txn(s, f"v{v}/end-bad-epoch", v, tid, pid, epoch + 1, True)
        end_txn(s, f"v{v}/end", v, tid, pid, epoch, v % 2 == 0)
        s.wait_txn_complete(tid)
        end_txn(s, f"v{v}/end-again", v, tid, pid, epoch, v % 2 == 0)
        end_txn(s, f"v{v}/end-opposite", v, tid, pid, epoch, v % 2 == 1)
        fetch_offsets(s, f"v{v}/offsets-after", 8, f"txg-{v}", [("tx-topic", [0])], require_stable=True)


@case("transactions/misuse")
def txn_misuse(s):
    s.create_topic("txm-topic", 1)
    s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["txm"]})
    end_txn(s, "end-unknown-tid", 3, "txm-none", 1, 0, True)
    add_partitions(s, "add-unknown-tid", 3, "txm-none", 1, 0, "txm-topic", [0])
    r = s.call(
        INIT_PID,
        4,
        {"transactional_id": "txm", "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    pid, epoch = r["producer_id"], r["producer_epoch"]
    end_txn(s, "end-without-begin", 3, "txm", pid, epoch, True)
    add_partitions(s, "add-wrong-pid", 3, "txm", pid + 1, epoch, "txm-topic", [0])
    s.check("produce-not-added", PRODUCE, 9, produce_req("txm-topic", 0, txn_batch(pid, epoch, 0), tid="txm"))
    s.check(
        "add-offsets-wrong-pid",
        ADD_OFFSETS,
        3,
        {"transactional_id": "txm", "producer_id": pid + 1, "producer_epoch": epoch, "group_id": "g"},
    )
    s.check(
        "txn-offset-commit-not-added",
        TXN_OFFSET_COMMIT,
        3,
        {
            "transactional_id": "txm",
            "group_id": "txm-g",
            "producer_id": pid,
            "producer_epoch": epoch,
            "topics": [
                {
                    "name": "txm-topic",
                    "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
                }
            ],
        },
    )
    add_partitions(s, "add", 3, "txm", pid, epoch, "txm-topic", [0])
    s.call(
        INIT_PID,
        4,
        {"transactional_id": "txm", "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    end_txn(s, "end-fenced-v3", 3, "txm", pid, epoch, True)
    end_txn(s, "end-fenced-v1", 1, "txm", pid, epoch, True)


@case("transactions/inspect")
def txn_inspect(s):
    s.create_topic("txi-topic", 1)
    s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["txi"]})
    r = s.call(
        INIT_PID,
        4,
        {"transactional_id": "txi", "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    pid, epoch = r["producer_id"], r["producer_epoch"]
    add_partitions(s, "add", 3, "txi", pid, epoch, "txi-topic", [0])
    s.check("produce", PRODUCE, 9, produce_req("txi-topic", 0, txn_batch(pid, epoch, 0, 3), tid="txi"))
    for v in versions(DESCRIBE_TXNS):
        s.check(f"describe-v{v}", DESCRIBE_TXNS, v, {"transactional_ids": ["txi", "txi-none"]})
    for v in versions(LIST_TXNS):
        s.check(f"list-v{v}/ongoing", LIST_TXNS, v, {"state_filters": ["Ongoing"], "producer_id_filters": []})
        s.check(f"list-v{v}/bad-state", LIST_TXNS, v, {"state_filters": ["Nope"], "producer_id_filters": []})
        if v >= 1:
            s.check(
                f"list-v{v}/duration",
                LIST_TXNS,
                v,
                {"state_filters": [], "producer_id_filters": [], "duration_filter": 3600000},
            )
    for v in versions(DESCRIBE_PRODUCERS):
        s.check(
            f"describe-producers-v{v}",
            DESCRIBE_PRODUCERS,
            v,
            {
                "topics": [
                    {"name": "txi-topic", "partition_indexes": [0, 4]},
                    {"name": "txi-none", "partition_indexes": [0]},
                ]
            },
        )
    end_txn(s, "abort", 3, "txi", pid, epoch, False)


@case("transactions/read-committed")
def txn_read_committed(s):
    """Aborted and committed transactions interleaved with an open one: LSO, aborted lists,
    control batches, ListOffsets by isolation level."""
    s.create_topic("txr-topic", 1)
    pids = {}
    for tid in ("txr-a", "txr-b"):
        s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
        r = s.call(
            INIT_PID,
            4,
            {
                "transactional_id": tid,
                "transaction_timeout_ms": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        pids[tid] = (r["producer_id"], r["producer_epoch"])
    seq = {"txr-a": 0, "txr-b": 0}

    def send(tid, n):
        pid, epoch = pids[tid]
        s.call(
            ADD_PARTITIONS,
            3,
            {
                "v3_and_below_transactional_id": tid,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": "txr-topic", "partitions": [0]}],
            },
        )
        s.check(
            f"produce-{tid}-{seq[tid]}",
            PRODUCE,
            9,
            produce_req("txr-topic", 0, txn_batch(pid, epoch, seq[tid], n), tid=tid),
        )
        seq[tid] += n

    def finish(tid, commit_):
        pid, epoch = pids[tid]
        end_txn(s, f"end-{tid}-{seq[tid]}", 3, tid, pid, epoch, commit_)
        s.wait_txn_complete(tid)

    send("txr-a", 2)
    send("txr-b", 1)
    finish("txr-a", False)
    send("txr-a", 3)
    finish("txr-a", True)
    for isolation in (0, 1):
        s.check(
            f"fetch-open-b-iso{isolation}", FETCH, 12, fetch_req([("txr-topic", 0, 0)], isolation=isolation)
        )
        s.check(
            f"fetch-open-b-from-3-iso{isolation}",
            FETCH,
            12,
            fetch_req([("txr-topic", 0, 3)], isolation=isolation),
        )
        s.check(
            f"latest-open-b-iso{isolation}",
            LIST_OFFSETS,
            7,
            list_offsets_req("txr-topic", [(0, -1)], isolation),
        )
    finish("txr-b", False)
    for isolation in (0, 1):
        for v in (4, 11, 12):
            s.check(
                f"fetch-done-v{v}-iso{isolation}",
                FETCH,
                v,
                fetch_req([("txr-topic", 0, 0)], isolation=isolation),
            )
        s.check(
            f"latest-done-iso{isolation}",
            LIST_OFFSETS,
            7,
            list_offsets_req("txr-topic", [(0, -1)], isolation),
        )
