"""DescribeClientQuotas (48): the stored client quotas matching a filter (broker/quotas.py), as
Kafka 4.4's ClientQuotasImage answers; needs DESCRIBE_CONFIGS on the cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.quotas import QuotaRequestError
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import DescribeClientQuotasRequest, DescribeClientQuotasResponse
    from minibroker.broker.context import RequestContext

API_KEY = 48


async def handle(ctx: RequestContext, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    # authorization
    if not ctx.allowed(Op.DESCRIBE_CONFIGS, Res.CLUSTER, CLUSTER_NAME):
        refused = ErrorCode.cluster_authorization_failed
        return ctx.response(throttle_time_ms=0, error_code=refused, error_message=None, entries=None)
    components = [(c.entity_type, c.match_type, c.match) for c in req.components]
    try:
        found = ctx.broker.quotas.store.describe(components, req.strict)
    except QuotaRequestError as exc:
        return ctx.response(throttle_time_ms=0, error_code=exc.code, error_message=exc.message, entries=None)
    entries = [
        dict(
            entity=[dict(entity_type=t, entity_name=n) for t, n in entity],
            values=[dict(key=k, value=v) for k, v in values.items()],
        )
        for entity, values in found
    ]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.none, error_message=None, entries=entries)
