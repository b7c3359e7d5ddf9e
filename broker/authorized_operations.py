"""Authorized-operations bit sets (KIP-430) for clients that ask for them.

minibroker has no authorizer, so every principal may do everything; Kafka without an authorizer
answers with every operation that applies to the resource type, and so do we. Bits are Kafka's
AclOperation codes.
"""

READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

#: The value of an authorized-operations field the client did not ask for (INT32_MIN).
NOT_REQUESTED = -(2**31)


def _bits(*ops: int) -> int:
    return sum(1 << op for op in ops)


TOPIC = _bits(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
CLUSTER = _bits(CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE)
GROUP = _bits(READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)


def when(requested: bool, operations: int) -> int:
    return operations if requested else NOT_REQUESTED
