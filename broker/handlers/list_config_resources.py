"""ListConfigResources (74; v0 was ListClientMetricsResources): the config resources that exist,
as Kafka 4.4 lists them. v0: the CLIENT_METRICS subscriptions. v1: the types asked for (none:
all Kafka supports): GROUP (the groups with configs of their own), CLIENT_METRICS,
BROKER_LOGGER and BROKER (this node), TOPIC (every topic); a type Kafka does not list is
UNSUPPORTED_VERSION for the whole request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.security.acls import CLUSTER_NAME, Operation
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ListConfigResourcesRequest, ListConfigResourcesResponse
    from minibroker.broker.context import RequestContext

API_KEY = 74

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32  # ConfigResource.Type
SUPPORTED = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


async def handle(ctx: RequestContext, req: ListConfigResourcesRequest) -> ListConfigResourcesResponse:
    # authorization (Kafka: DESCRIBE_CONFIGS on the cluster)
    if not ctx.allowed(Operation.DESCRIBE_CONFIGS, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.cluster_authorization_failed, config_resources=[]
        )
    subscriptions = sorted(ctx.broker.dynamic_configs.telemetry.subscriptions)
    if ctx.api_version == 0:
        resources = [dict(resource_name=name) for name in subscriptions]
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, config_resources=resources)
    wanted = list(field(req, "resource_types", ())) or list(SUPPORTED)
    if any(t not in SUPPORTED for t in wanted):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.unsupported_version, config_resources=[])
    node = str(ctx.broker.node_id)
    out: list[dict] = []
    # Kafka's order: groups, client metrics, broker loggers, brokers, topics
    if GROUP in wanted:  # the groups with configs of their own (broker/group_configs.py)
        out += [
            dict(resource_name=name, resource_type=GROUP) for name in sorted(ctx.broker.group_configs.groups)
        ]
    if CLIENT_METRICS in wanted:
        out += [dict(resource_name=name, resource_type=CLIENT_METRICS) for name in subscriptions]
    if BROKER_LOGGER in wanted:
        out.append(dict(resource_name=node, resource_type=BROKER_LOGGER))
    if BROKER in wanted:
        out.append(dict(resource_name=node, resource_type=BROKER))
    if TOPIC in wanted:
        out += [dict(resource_name=name, resource_type=TOPIC) for name in sorted(ctx.broker.logs.topics)]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, config_resources=out)
