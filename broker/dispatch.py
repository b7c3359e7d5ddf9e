"""The one table from API key to handler module (broker/handlers/<api_name>.py).

ApiVersions advertises exactly this table, so a key is advertised if and only if it is served.
"""

from minibroker.broker.handlers import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    describe_topic_partitions,
    elect_leaders,
    fetch,
    incremental_alter_configs,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    produce,
)
from minibroker.broker.handlers import (  # consumer groups (coordinator/groups.py)
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)

from minibroker.broker.handlers import (  # transactions (coordinator/transactions.py)
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_producers,
    describe_transactions,
    end_txn,
    init_producer_id,
    list_transactions,
    txn_offset_commit,
    write_txn_markers,
)

from minibroker.broker.handlers import (  # security (broker/security/)
    alter_user_scram_credentials,
    create_acls,
    delete_acls,
    describe_acls,
    describe_user_scram_credentials,
    sasl_authenticate,
    sasl_handshake,
)

HANDLERS = {
    0: produce,
    1: fetch,
    2: list_offsets,
    3: metadata,
    8: offset_commit,
    9: offset_fetch,
    10: find_coordinator,
    11: join_group,
    12: heartbeat,
    13: leave_group,
    14: sync_group,
    15: describe_groups,
    16: list_groups,
    17: sasl_handshake,
    18: api_versions,
    19: create_topics,
    20: delete_topics,
    21: delete_records,
    22: init_producer_id,
    23: offset_for_leader_epoch,
    24: add_partitions_to_txn,
    25: add_offsets_to_txn,
    26: end_txn,
    27: write_txn_markers,
    28: txn_offset_commit,
    29: describe_acls,
    30: create_acls,
    31: delete_acls,
    32: describe_configs,
    33: alter_configs,
    35: describe_log_dirs,
    36: sasl_authenticate,
    37: create_partitions,
    42: delete_groups,
    43: elect_leaders,
    44: incremental_alter_configs,
    47: offset_delete,
    50: describe_user_scram_credentials,
    51: alter_user_scram_credentials,
    60: describe_cluster,
    61: describe_producers,
    65: describe_transactions,
    66: list_transactions,
    75: describe_topic_partitions,
}

for _key, _module in HANDLERS.items():
    assert _module.API_KEY == _key, f"{_module.__name__} registered under key {_key}"


def supports(api_key: int, api_version: int) -> bool:
    module = HANDLERS.get(api_key)
    return module is not None and module.MIN_VERSION <= api_version <= module.MAX_VERSION
