"""Feature levels (ApiVersions tags 0-2, UpdateFeatures) and transactions V2 (KIP-890 part 2):
EndTxn v5, implicit partition addition on Produce v12, TxnOffsetCommit v5/v6."""

import uuid

from conformance.cases import case, versions
from conformance.cases.c_data import PRODUCE, produce_req
from conformance.cases.d_groups import FIND_COORDINATOR, fetch_offsets
from conformance.cases.e_txn import DESCRIBE_TXNS, INIT_PID, TXN_OFFSET_COMMIT, end_txn, txn_batch

APIV, METADATA, UPDATE_FEATURES = 18, 3, 57
TV = "transaction.version"


API_VERSIONS_V4 = {"client_software_name": "conformance", "client_software_version": "1.0"}


def transaction_version(s) -> int:
    """The finalized transaction.version this broker reports (0: absent)."""
    answer = s.call(APIV, 4, API_VERSIONS_V4)
    return {f["name"]: f["max_version_level"] for f in answer["finalized_features"]}.get(TV, 0)


def wait_transaction_version(s, level):
    """Kafka's brokers learn a feature change from the metadata log a moment after UpdateFeatures
    answers: wait until ApiVersions shows it."""
    s.wait_until(lambda: transaction_version(s) == level, f"{TV} finalized at {level}", 30)


def api_versions_features(s, label, level):
    """ApiVersions once `transaction.version` is finalized at `level` on this broker."""
    wait_transaction_version(s, level)
    s.check(label, APIV, 4, API_VERSIONS_V4)


def set_transaction_version(s, level):
    """Finalize transaction.version at `level` (`python -m conformance --transaction-version`:
    the whole run on the classic or the V2 transaction path), uncompared."""
    current = transaction_version(s)
    if current != level:
        kind = 1 if level > current else 2
        s.call(
            UPDATE_FEATURES,
            1,
            {
                "timeout_ms": 60000,
                "feature_updates": [{"feature": TV, "max_version_level": level, "upgrade_type": kind}],
                "validate_only": False,
            },
        )
    wait_transaction_version(s, level)


def update(s, label, v, updates, validate_only=False):
    items = [
        {"feature": name, "max_version_level": level, "upgrade_type": kind, "allow_downgrade": kind > 1}
        for name, level, kind in updates
    ]
    return s.check(
        label,
        UPDATE_FEATURES,
        v,
        {"timeout_ms": 60000, "feature_updates": items, "validate_only": validate_only},
    )


@case("api_versions/features")
def features_update(s):
    initial = transaction_version(s)  # 2 unless the run chose another level
    set_transaction_version(s, 2)
    api_versions_features(s, "before", 2)
    for v in versions(UPDATE_FEATURES):
        validate = v >= 1
        update(s, f"v{v}/empty", v, [])
        update(s, f"v{v}/same-level", v, [(TV, 2, 1)], validate)
        update(s, f"v{v}/downgrade-as-upgrade", v, [(TV, 1, 1)], validate)
        update(s, f"v{v}/above-supported", v, [(TV, 3, 1)], validate)
        update(s, f"v{v}/unknown-feature", v, [("foo.version", 1, 1)], validate)
        update(s, f"v{v}/second-unknown", v, [(TV, 2, 1), ("foo.version", 1, 1)], validate)
        if v >= 1:
            update(s, f"v{v}/safe-downgrade-validate", v, [(TV, 1, 2)], True)
            update(s, f"v{v}/unsafe-downgrade-validate", v, [(TV, 0, 3)], True)
            update(s, f"v{v}/negative", v, [(TV, -1, 2)], True)
            update(s, f"v{v}/bad-upgrade-type", v, [(TV, 1, 4)], True)
    update(s, "v0/delete", 0, [(TV, 0, 2)])  # v0's allow_downgrade: ignored, refused
    api_versions_features(s, "v0-no-downgrade", 2)
    update(s, "v1/safe-downgrade", 1, [(TV, 1, 2)])
    api_versions_features(s, "tv1", 1)
    update(s, "v2/unsafe-delete", 2, [(TV, 0, 3)])
    api_versions_features(s, "deleted", 0)
    update(s, "v1/upgrade-to-2", 1, [(TV, 2, 1)])
    api_versions_features(s, "after", 2)
    set_transaction_version(s, initial)


def init(s, tid):
    s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
    r = s.call(
        INIT_PID,
        4,
        {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    return r["producer_id"], r["producer_epoch"]


def txn_offset_commit(s, label, v, tid, group, pid, epoch, topic, topic_id):
    return s.check(
        label,
        TXN_OFFSET_COMMIT,
        v,
        {
            "transactional_id": tid,
            "group_id": group,
            "producer_id": pid,
            "producer_epoch": epoch,
            "topics": [
                {
                    "name": topic,
                    "topic_id": topic_id,
                    "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": "m"}],
                }
            ],
        },
    )


def topic_id(s, topic):
    md = s.call(METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return uuid.UUID(str(md["topics"][0]["topic_id"]))


@case("transactions/v2-flow")
def txn_v2_flow(s):
    topic = "tx2-topic"
    s.create_topic(topic, 2)
    tid = topic_id(s, topic)
    for tv in (5, 6):
        txn, group = f"tx2-{tv}", f"tx2g-{tv}"
        pid, epoch = init(s, txn)
        s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        # Produce v12 adds the partition itself; v11 only verifies (not added: refused)
        s.check(f"v{tv}/produce-v12", PRODUCE, 12, produce_req(topic, 0, txn_batch(pid, epoch, 0), tid=txn))
        s.check(
            f"v{tv}/produce-v11-not-added",
            PRODUCE,
            11,
            produce_req(topic, 1, txn_batch(pid, epoch, 0), tid=txn),
        )
        s.check(f"v{tv}/describe-ongoing", DESCRIBE_TXNS, 0, {"transactional_ids": [txn]})
        # TxnOffsetCommit v5+ adds the group's offsets partition itself
        txn_offset_commit(s, f"v{tv}/txn-offset-commit", tv, txn, group, pid, epoch, topic, tid)
        fetch_offsets(s, f"v{tv}/offsets-pending", 8, group, [(topic, [0])], require_stable=True)
        end_txn(s, f"v{tv}/end-bad-epoch", 5, txn, pid, epoch + 1, True)
        end_txn(s, f"v{tv}/commit", 5, txn, pid, epoch, True)
        s.wait_txn_complete(txn)
        fetch_offsets(s, f"v{tv}/offsets-after", 8, group, [(topic, [0])], require_stable=True)
        # a retry of the completed end, with the previous epoch
        end_txn(s, f"v{tv}/commit-retry", 5, txn, pid, epoch, True)
        end_txn(s, f"v{tv}/abort-retry-opposite", 5, txn, pid, epoch, False)
        # the old epoch is fenced; the bumped one goes on
        s.check(
            f"v{tv}/produce-old-epoch", PRODUCE, 12, produce_req(topic, 0, txn_batch(pid, epoch, 1), tid=txn)
        )
        txn_offset_commit(s, f"v{tv}/txn-offset-commit-old-epoch", tv, txn, group, pid, epoch, topic, tid)
        s.check(
            f"v{tv}/produce-next", PRODUCE, 12, produce_req(topic, 0, txn_batch(pid, epoch + 1, 0), tid=txn)
        )
        end_txn(s, f"v{tv}/abort", 5, txn, pid, epoch + 1, False)
        s.wait_txn_complete(txn)
        # nothing added: an abort still ends (and bumps), a commit is refused
        end_txn(s, f"v{tv}/abort-nothing-added", 5, txn, pid, epoch + 2, False)
        s.wait_txn_complete(txn)
        end_txn(s, f"v{tv}/commit-nothing-added", 5, txn, pid, epoch + 3, True)
        s.check(f"v{tv}/describe-after", DESCRIBE_TXNS, 0, {"transactional_ids": [txn]})
        # a second instance fences it
        init(s, txn)
        s.wait_txn_complete(txn)
        s.check(f"v{tv}/describe-fenced", DESCRIBE_TXNS, 0, {"transactional_ids": [txn]})
        end_txn(s, f"v{tv}/end-fenced", 5, txn, pid, epoch + 3, True)
        s.check(
            f"v{tv}/produce-fenced", PRODUCE, 12, produce_req(topic, 0, txn_batch(pid, epoch + 3, 0), tid=txn)
        )


@case("transactions/v2-misuse")
def txn_v2_misuse(s):
    topic = "tx2m-topic"
    s.create_topic(topic, 1)
    tid = topic_id(s, topic)
    s.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["tx2m"]})
    end_txn(s, "end-unknown-tid", 5, "tx2m-none", 1, 0, True)
    end_txn(s, "end-empty-tid", 5, "", 1, 0, True)
    pid, epoch = init(s, "tx2m")
    end_txn(s, "end-wrong-pid", 5, "tx2m", pid + 1, epoch, False)
    s.check(
        "produce-wrong-epoch", PRODUCE, 12, produce_req(topic, 0, txn_batch(pid, epoch + 5, 0), tid="tx2m")
    )
    s.check(
        "produce-unknown-tid", PRODUCE, 12, produce_req(topic, 0, txn_batch(pid, epoch, 0), tid="tx2m-none")
    )
    s.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["tx2m-g"]})
    for v in (5, 6):
        txn_offset_commit(
            s, f"v{v}/txn-offset-commit-wrong-pid", v, "tx2m", "tx2m-g", pid + 1, epoch, topic, tid
        )
        txn_offset_commit(
            s,
            f"v{v}/txn-offset-commit-unknown-topic",
            v,
            "tx2m",
            "tx2m-g",
            pid,
            epoch,
            "tx2m-none",
            uuid.UUID(int=0xABCE),
        )
    s.check(
        "v6/unknown-topic-id",
        TXN_OFFSET_COMMIT,
        6,
        {
            "transactional_id": "tx2m",
            "group_id": "tx2m-g",
            "producer_id": pid,
            "producer_epoch": epoch,
            "topics": [
                {
                    "topic_id": uuid.UUID(int=0xABCD),
                    "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}],
                }
            ],
        },
    )
    end_txn(s, "abort", 5, "tx2m", pid, epoch, False)
    s.wait_txn_complete("tx2m")
    s.check("describe", DESCRIBE_TXNS, 0, {"transactional_ids": ["tx2m"]})
