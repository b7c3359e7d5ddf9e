"""UpdateFeatures (57), versions 0-2: change finalized feature levels (broker/features.py), as
`kafka-features.sh upgrade/downgrade` and Admin.updateFeatures do.

Kafka's rules: ALTER on the cluster; all or nothing (the first refused update fails the request
with INVALID_UPDATE_VERSION and the controller's message); an unknown feature, a level outside
the supported range, a downgrade asked as an upgrade, an unknown upgrade type are refused;
`validate_only` (v1+) checks without changing. v0 has `allow_downgrade` instead of the upgrade
type, which Kafka 4.4 ignores (v0 only upgrades). v0-1 answer a result per feature (none when
the request failed); v2 only the top level."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.broker.features import UPGRADE, FeatureUpdate
from minibroker.broker.security.acls import CLUSTER_NAME
from minibroker.broker.security.acls import Operation as Op
from minibroker.broker.security.acls import ResourceType as Res
from minibroker.protocol.codec import field
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import UpdateFeaturesRequest, UpdateFeaturesResponse
    from minibroker.broker.context import RequestContext

API_KEY = 57


def _update(item: object, api_version: int) -> FeatureUpdate:
    # v0's allow_downgrade is not honoured by Kafka 4.4 (every v0 update is an upgrade: a lower
    # level is refused as a downgrade without a downgrade type)
    kind = field(item, "upgrade_type", UPGRADE) if api_version >= 1 else UPGRADE
    return FeatureUpdate(field(item, "feature", ""), field(item, "max_version_level", 0), kind)


async def handle(ctx: RequestContext, req: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    if not ctx.allowed(Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message=None,
            results=[],
        )
    updates = [_update(item, ctx.api_version) for item in req.feature_updates]
    error, message = ctx.broker.features.update(updates, bool(field(req, "validate_only", False)))
    results = []
    if error == ErrorCode.none:
        results = [dict(feature=u.feature, error_code=ErrorCode.none, error_message="NONE") for u in updates]
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=message, results=results)
