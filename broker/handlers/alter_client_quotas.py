"""AlterClientQuotas (49): set or remove client quotas (broker/quotas.py), validated as Kafka
4.4's ClientQuotaControlManager does, persisted before the answer; needs ALTER_CONFIGS on the
cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.quotas import IP, unresolvable_hosts
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import AlterClientQuotasRequest, AlterClientQuotasResponse
    from minibroker.broker.context import RequestContext

API_KEY = 49


async def handle(ctx: RequestContext, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    # Kafka builds each entity as a map (a repeated type keeps its last name)
    requested = [
        (
            [(e.entity_type, e.entity_name) for e in entry.entity],
            [(op.key, None if op.remove else float(op.value)) for op in entry.ops],
        )
        for entry in req.entries
    ]
    # authorization
    if not ctx.allowed(Op.ALTER_CONFIGS, Res.CLUSTER, CLUSTER_NAME):
        refused = ErrorCode.cluster_authorization_failed
        return ctx.response(
            throttle_time_ms=0,
            entries=[
                dict(
                    error_code=refused,
                    error_message=None,
                    entity=[dict(entity_type=t, entity_name=n) for t, n in dict(pairs).items()],
                )
                for pairs, _ in requested
            ],
        )
    hosts = await unresolvable_hosts(name for pairs, _ in requested for t, name in pairs if t == IP)
    results = ctx.broker.quotas.alter(requested, req.validate_only, hosts)
    return ctx.response(
        throttle_time_ms=0,
        entries=[
            dict(
                error_code=code,
                error_message=message,
                entity=[dict(entity_type=t, entity_name=n) for t, n in entity],
            )
            for entity, code, message in results
        ],
    )
