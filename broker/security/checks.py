"""Authorization checks shared by several handlers (the config APIs address topics and brokers
alike)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.context import RequestContext

_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_CLIENT_METRICS, _CONFIG_GROUP = 2, 4, 16, 32  # ConfigResource.Type


class ConfigResource(Protocol):
    """A config request's resource (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs)."""

    @property
    def resource_type(self) -> int: ...

    @property
    def resource_name(self) -> str: ...


def config_resource_denial(
    ctx: RequestContext, resource_type: int, name: str, operation: int
) -> ErrorCode | None:
    """Kafka: DESCRIBE_CONFIGS/ALTER_CONFIGS on the topic or group, or on the cluster for a broker; the
    error to answer, or None when allowed."""
    if resource_type in (_CONFIG_BROKER, _CONFIG_CLIENT_METRICS):
        return (
            None
            if ctx.allowed(operation, Res.CLUSTER, CLUSTER_NAME)
            else ErrorCode.cluster_authorization_failed
        )
    if resource_type == _CONFIG_TOPIC:
        return None if ctx.allowed(operation, Res.TOPIC, name) else ErrorCode.topic_authorization_failed
    if resource_type == _CONFIG_GROUP:
        return None if ctx.allowed(operation, Res.GROUP, name) else ErrorCode.group_authorization_failed
    return None  # other resource types are refused by the handler itself


def denied_config_result(resource: ConfigResource, error: ErrorCode) -> dict[str, Any]:
    return dict(
        error_code=error,
        error_message=None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )
