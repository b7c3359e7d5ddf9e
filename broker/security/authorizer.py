"""The ACL authorizer: Kafka's StandardAuthorizer rules over the AclStore.

For (principal, host, operation, resource): super users are allowed; a matching DENY wins over
any ALLOW; an ALLOW of the operation (or ALL) allows it, where READ, WRITE, DELETE and ALTER also
allow DESCRIBE and ALTER_CONFIGS allows DESCRIBE_CONFIGS; a resource with no ACL at all (for any
principal) is allowed only if allow.everyone.if.no.acl.found. Denials are logged at debug level.
"""

from __future__ import annotations

import structlog
from minibroker.broker.security.acl_store import AclStore
from minibroker.broker.security.acls import SUPPORTED_OPERATIONS, WILDCARD, Operation, PatternType, Permission

log = structlog.get_logger("minibroker.broker.security")

_IMPLIED_BY: dict[int, tuple[Operation, ...]] = {
    Operation.DESCRIBE: (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER),
    Operation.DESCRIBE_CONFIGS: (Operation.ALTER_CONFIGS,),
}
# authorized-operations fields are 32-bit; Kafka sends INT32_MIN when they were not asked for
OPERATIONS_NOT_REQUESTED = -2147483648


class Authorizer:
    def __init__(self, store: AclStore, super_users: str, allow_if_no_acl: bool) -> None:
        self.store = store
        self.super_users = {u.strip() for u in super_users.split(";") if u.strip()}
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        acls = [acl for acl in self.store.acls if acl.applies_to(resource_type, name)]
        if not acls:
            allowed = self.allow_if_no_acl
        else:
            mine = [
                acl for acl in acls if acl.principal in (principal, "User:*") and acl.host in (host, WILDCARD)
            ]
            granting = (operation, Operation.ALL, *_IMPLIED_BY.get(operation, ()))
            if any(
                a.permission == Permission.DENY and a.operation in (operation, Operation.ALL) for a in mine
            ):
                allowed = False
            else:
                allowed = any(a.permission == Permission.ALLOW and a.operation in granting for a in mine)
        if not allowed:
            log.debug(
                "authorization denied",
                principal=principal,
                host=host,
                operation=Operation(operation).name,
                resource_type=resource_type,
                resource=name,
            )
        return allowed

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Kafka's authorizeByResourceType: may the principal do `operation` on some resource of
        this type (an ALLOW for it that no DENY on the wildcard or an empty prefix cancels)?"""
        if principal in self.super_users:
            return True
        mine = [
            a
            for a in self.store.acls
            if a.resource_type == resource_type
            and a.principal in (principal, "User:*")
            and a.host in (host, WILDCARD)
        ]
        ops = (operation, Operation.ALL)
        if any(
            a.permission == Permission.DENY
            and a.operation in ops
            and (
                (a.pattern_type == PatternType.LITERAL and a.resource_name == WILDCARD)
                or (a.pattern_type == PatternType.PREFIXED and a.resource_name == "")
            )
            for a in mine
        ):
            return False
        if any(a.permission == Permission.ALLOW and a.operation in ops for a in mine):
            return True
        return self.allow_if_no_acl and not any(a.resource_type == resource_type for a in self.store.acls)

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << op
        return bits


def all_operations(resource_type: int) -> int:
    """The authorized-operations bit field when no authorizer is configured (everything)."""
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])
