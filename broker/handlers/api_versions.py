"""ApiVersions (18): advertise exactly the handler table in broker/dispatch.py, and (v3+, tags
0-2) the supported and finalized feature levels of broker/features.py with their epoch, as Kafka
does: `transaction.version` finalized at 2 turns on KIP-890 transactions V2 in Java 4.x clients.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from minibroker.broker.dispatch import FEATURE_GATED, HANDLERS, UNADVERTISED_TELEMETRY
from minibroker.protocol.codec import build, encode_response, field, response_class
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.broker.api_types import ApiVersionsRequest, ApiVersionsResponse
    from minibroker.broker.context import RequestContext

API_KEY = 18


def _api_keys(telemetry: bool = False, level: Callable[[str], int] = lambda name: 0) -> list[dict]:
    """The table; 71/72 only when pushes are wanted (Kafka: with a telemetry exporter); a key of
    FEATURE_GATED only while its feature is finalized at its level (`level`: feature -> level)."""
    return [
        dict(api_key=key, min_version=h.min_version, max_version=h.max_version)
        for key, h in sorted(HANDLERS.items())
        if (telemetry or key not in UNADVERTISED_TELEMETRY)
        and (key not in FEATURE_GATED or level(FEATURE_GATED[key][0]) >= FEATURE_GATED[key][1])
    ]


def unsupported_version_body() -> bytes:
    """A v0 body with UNSUPPORTED_VERSION, for requests above our max: clients retry with the
    max they find for key 18 in the list."""
    cls = response_class(API_KEY, 0)
    assert cls is not None  # kio has every ApiVersions version up to 4
    return encode_response(build(cls, dict(error_code=ErrorCode.unsupported_version, api_keys=_api_keys())))


# KIP-511: what a client may call itself (v3+), checked as Kafka's ApiVersionsRequest.isValid.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _valid(req: ApiVersionsRequest) -> bool:
    name = field(req, "client_software_name", None)
    if name is None:  # v0-2 carry no software name
        return True
    if (field(req, "cluster_id", None) is None) != (field(req, "node_id", -1) < 0):
        return False  # v5: the cluster id and the node id come together or not at all
    return bool(_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(field(req, "client_software_version", "")))


def _wrong_broker(ctx: RequestContext, req: ApiVersionsRequest) -> bool:
    """v5 (KIP-1242): a client that names the cluster and node it means to reach learns when it
    reached another (REBOOTSTRAP_REQUIRED); either left unset means "not known"."""
    cluster_id, node_id = field(req, "cluster_id", None), field(req, "node_id", -1)
    if cluster_id is None or node_id < 0:
        return False
    return cluster_id != ctx.broker.logs.cluster_id or node_id != ctx.broker.node_id


async def handle(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    if not _valid(req):
        return ctx.response(
            error_code=ErrorCode.invalid_request, api_keys=[], throttle_time_ms=0, finalized_features_epoch=-1
        )
    if _wrong_broker(ctx, req):
        return ctx.response(
            error_code=ErrorCode.rebootstrap_required,
            api_keys=[],
            throttle_time_ms=0,
            finalized_features_epoch=-1,
        )
    name = field(req, "client_software_name", None)
    if name is not None and ctx.session is not None:  # KIP-714's match on the client software
        ctx.session.client_software = (name, field(req, "client_software_version", ""))
    features = ctx.broker.features
    return ctx.response(
        error_code=ErrorCode.none,
        api_keys=_api_keys(ctx.broker.dynamic_configs.telemetry.advertise, features.level),
        throttle_time_ms=0,
        # Kafka answers v3 without the supported features whose minimum is 0 (clients before
        # KIP-1022 could not read a 0 minimum)
        supported_features=[f for f in features.supported() if ctx.api_version >= 4 or f["min_version"] > 0],
        finalized_features_epoch=features.epoch,
        finalized_features=features.finalized(),
    )
