"""Recipe: a stuck transaction is aborted by transaction.timeout.ms, without waiting a minute."""

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import minibroker.testing

with minibroker.testing.broker(clock="manual") as b:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("payments", 1)])["payments"].result(30)
    stuck = Producer(
        {"bootstrap.servers": b.bootstrap, "transactional.id": "stuck-job", "transaction.timeout.ms": 60000}
    )
    stuck.init_transactions(30)
    stuck.begin_transaction()
    stuck.produce("payments", value="never committed")
    stuck.flush(30)  # written; the job now hangs without committing or aborting

    p = b.state.partition("payments", 0)
    assert p["last_stable_offset"] == 0 < p["high_watermark"]  # read_committed readers are held
    b.clock.advance(61)  # past transaction.timeout.ms: the coordinator aborts it
    b.state.wait_for_transactions_complete(timeout=10)
    (txn,) = [t for t in b.state.transactions() if t["transactional_id"] == "stuck-job"]
    assert txn["state"] in ("CompleteAbort", "Empty"), txn
    p = b.state.partition("payments", 0)
    assert p["last_stable_offset"] == p["high_watermark"] == p["log_end_offset"]  # abort marker written
    assert p["ongoing_transactions"] == []
    print("stuck transaction aborted by the timeout after", b.clock.now_ms(), "ms of broker time")
