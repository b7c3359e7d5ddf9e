"""The one table from API key to handler (broker/handlers/<api_name>.py) and its version range.

ApiVersions advertises exactly this table, so a key is advertised if and only if it is served.
The versions live here, not in the handler modules, so that advertising them imports nothing:
a handler module (and what only it needs: SCRAM's hashing, the ACL store, the cleaner's process
pool...) is imported at its API's first request, as protocol/codec.py does for schemas. A broker
that a test suite starts for a few APIs never loads the rest (start time and idle memory, issue
14). tests/unit/test_dispatch.py imports every module and checks it against this table.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable


class Handler:
    """One API key's entry: the handler module's name and the versions it serves."""

    __slots__ = ("api_key", "name", "min_version", "max_version", "_handle")

    def __init__(self, api_key: int, name: str, min_version: int, max_version: int) -> None:
        self.api_key = api_key
        self.name = name  # the module in broker/handlers/, e.g. "offset_for_leader_epoch"
        self.min_version = min_version
        self.max_version = max_version
        self._handle: Callable[..., Awaitable[object]] | None = None

    @property
    def module_name(self) -> str:
        return f"minibroker.broker.handlers.{self.name}"

    @property
    def handle(self) -> Callable[..., Awaitable[object]]:
        """The module's `async def handle(ctx, request)`, importing the module the first time."""
        if self._handle is None:
            self._handle = importlib.import_module(self.module_name).handle
        return self._handle


def _table(*rows: tuple[int, str, int, int]) -> dict[int, Handler]:
    return {key: Handler(key, name, low, high) for key, name, low, high in rows}


HANDLERS = _table(
    (0, "produce", 0, 13),
    (1, "fetch", 4, 18),
    (2, "list_offsets", 1, 11),
    (3, "metadata", 0, 13),
    (8, "offset_commit", 2, 10),
    (9, "offset_fetch", 1, 10),
    (10, "find_coordinator", 0, 6),
    (11, "join_group", 0, 9),
    (12, "heartbeat", 0, 4),
    (13, "leave_group", 0, 5),
    (14, "sync_group", 0, 5),
    (15, "describe_groups", 0, 6),
    (16, "list_groups", 0, 5),
    (17, "sasl_handshake", 0, 1),
    (18, "api_versions", 0, 5),
    (19, "create_topics", 2, 7),
    (20, "delete_topics", 1, 6),
    (21, "delete_records", 0, 2),
    (22, "init_producer_id", 0, 5),
    (23, "offset_for_leader_epoch", 2, 4),
    (24, "add_partitions_to_txn", 0, 3),
    (25, "add_offsets_to_txn", 0, 4),
    (26, "end_txn", 0, 5),
    (27, "write_txn_markers", 1, 2),
    (28, "txn_offset_commit", 0, 6),
    (29, "describe_acls", 1, 3),
    (30, "create_acls", 1, 3),
    (31, "delete_acls", 1, 3),
    (32, "describe_configs", 1, 4),
    (33, "alter_configs", 0, 2),
    (34, "alter_replica_log_dirs", 1, 2),
    (35, "describe_log_dirs", 1, 5),  # v5 adds is_cordoned: never, one directory
    (36, "sasl_authenticate", 0, 2),
    (37, "create_partitions", 0, 3),
    (38, "create_delegation_token", 1, 3),
    (39, "renew_delegation_token", 1, 2),
    (40, "expire_delegation_token", 1, 2),
    (41, "describe_delegation_token", 1, 3),
    (42, "delete_groups", 0, 3),
    (43, "elect_leaders", 0, 2),
    (44, "incremental_alter_configs", 0, 1),
    (45, "alter_partition_reassignments", 0, 1),
    (46, "list_partition_reassignments", 0, 0),
    (47, "offset_delete", 0, 0),
    (48, "describe_client_quotas", 0, 1),
    (49, "alter_client_quotas", 0, 1),
    (50, "describe_user_scram_credentials", 0, 0),
    (51, "alter_user_scram_credentials", 0, 0),
    (55, "describe_quorum", 0, 2),
    (57, "update_features", 0, 2),
    (60, "describe_cluster", 0, 2),
    (61, "describe_producers", 0, 0),
    (64, "unregister_broker", 0, 0),
    (65, "describe_transactions", 0, 0),
    (66, "list_transactions", 0, 2),
    (68, "consumer_group_heartbeat", 0, 1),  # advertised with group.version >= 1 (FEATURE_GATED)
    (69, "consumer_group_describe", 0, 1),
    (71, "get_telemetry_subscriptions", 0, 0),  # advertised only with minibroker.telemetry.advertise
    (72, "push_telemetry", 0, 0),
    (74, "list_config_resources", 0, 1),
    (75, "describe_topic_partitions", 0, 0),
    (76, "share_group_heartbeat", 1, 1),  # advertised with share.version >= 1 (FEATURE_GATED)
    (77, "share_group_describe", 1, 1),
    (78, "share_fetch", 1, 2),
    (79, "share_acknowledge", 1, 2),
    (80, "add_raft_voter", 0, 1),
    (81, "remove_raft_voter", 0, 0),
    (90, "describe_share_group_offsets", 0, 1),
    (91, "alter_share_group_offsets", 0, 0),
    (92, "delete_share_group_offsets", 0, 0),
    (94, "unregister_controller", 0, 0),
)


#: Served always but advertised only when `minibroker.telemetry.advertise` is true: Kafka 4.4
#: lists them only with a telemetry exporter configured, yet answers them either way.
UNADVERTISED_TELEMETRY = frozenset({71, 72})

#: Served always but advertised only while a feature is finalized at a level (Kafka leaves the
#: KIP-848 keys out of ApiVersions below group.version 1; the share keys, which Kafka lists at
#: every level, stay out until share.version is finalized here): api key -> (feature, level).
FEATURE_GATED: dict[int, tuple[str, int]] = {
    68: ("group.version", 1),
    69: ("group.version", 1),
    **{key: ("share.version", 1) for key in (76, 77, 78, 79, 90, 91, 92)},
}


def supports(api_key: int, api_version: int) -> bool:
    handler = HANDLERS.get(api_key)
    return handler is not None and handler.min_version <= api_version <= handler.max_version
