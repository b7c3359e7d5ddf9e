"""ACL bindings and filters with Kafka's wire codes (sans I/O).

A binding is (resource type, resource name, pattern type, principal, host, operation,
permission). A filter has the same fields where ANY / None match everything, and pattern type
MATCH matches every pattern that would apply to the named resource (exact literal, the literal
wildcard '*', and prefixes of the name), as in Kafka's AclBindingFilter.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"

# Kafka's AclEntry.supportedOperations: what authorized-operations fields may contain.
SUPPORTED_OPERATIONS: dict[int, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        Operation.READ,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
    ResourceType.DELEGATION_TOKEN: (Operation.DESCRIBE,),
    ResourceType.USER: (Operation.CREATE_TOKENS, Operation.DESCRIBE_TOKENS),
}


class InvalidAcl(ValueError):
    """The binding or filter cannot be stored or used; the message is sent to the client."""


#: the request's fields in the order of AclBinding's and AclFilter's
_CREATION_FIELDS = (
    "resource_type",
    "resource_name",
    "resource_pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)
_FILTER_FIELDS = (
    "resource_type_filter",
    "resource_name_filter",
    "pattern_type_filter",
    "principal_filter",
    "host_filter",
    "operation",
    "permission_type",
)


@dataclass(frozen=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    @classmethod
    def of_creation(cls, c: object) -> AclBinding:
        """From a CreateAcls creation (a missing field fails loudly, never defaults)."""
        return cls(*(getattr(c, name) for name in _CREATION_FIELDS))

    def validate(self) -> None:
        if self.resource_type not in SUPPORTED_OPERATIONS:
            raise InvalidAcl(f"invalid resource type {self.resource_type}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"invalid pattern type {self.pattern_type}: use LITERAL or PREFIXED")
        if (
            self.operation in (Operation.UNKNOWN, Operation.ANY)
            or self.operation not in Operation._value2member_map_
        ):
            raise InvalidAcl(f"invalid operation {self.operation}")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise InvalidAcl(f"invalid permission type {self.permission}")
        if not self.resource_name:
            raise InvalidAcl("resource name must not be empty")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise InvalidAcl(f"invalid principal {self.principal!r}: expected principalType:principalName")
        if not self.host:
            raise InvalidAcl("host must not be empty (use * for any host)")

    def applies_to(self, resource_type: int, name: str) -> bool:
        """Does this binding's resource pattern cover the resource (type, name)?"""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name == name or self.resource_name == WILDCARD
        return name.startswith(self.resource_name)

    def to_json(self) -> list[int | str]:
        return [
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission,
        ]


@dataclass(frozen=True)
class AclFilter:
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    @classmethod
    def of_request(cls, f: object) -> AclFilter:
        """From a DescribeAcls request or a DeleteAcls filter (the same fields)."""
        return cls(*(getattr(f, name) for name in _FILTER_FIELDS))

    def validate(self) -> None:
        if (
            self.resource_type == ResourceType.UNKNOWN
            or self.resource_type not in ResourceType._value2member_map_
        ):
            raise InvalidAcl(f"invalid resource type filter {self.resource_type}")
        if (
            self.pattern_type == PatternType.UNKNOWN
            or self.pattern_type not in PatternType._value2member_map_
        ):
            raise InvalidAcl(f"invalid pattern type filter {self.pattern_type}")
        if self.operation == Operation.UNKNOWN or self.operation not in Operation._value2member_map_:
            raise InvalidAcl(f"invalid operation filter {self.operation}")
        if self.permission == Permission.UNKNOWN or self.permission not in Permission._value2member_map_:
            raise InvalidAcl(f"invalid permission type filter {self.permission}")

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and acl.resource_type != self.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation != Operation.ANY and acl.operation != self.operation:
            return False
        return self.permission == Permission.ANY or acl.permission == self.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(acl.resource_name)
        if self.pattern_type != PatternType.ANY and acl.pattern_type != self.pattern_type:
            return False
        return self.resource_name is None or acl.resource_name == self.resource_name
