"""ApiVersions v5 (KIP-1242), which kio 0.6.5 predates: the schema classes kio would generate.

v5 adds ClusterId and NodeId to the request (a client names the broker it means to reach; a
mismatch answers REBOOTSTRAP_REQUIRED); the response is v4's. The classes follow kio's
conventions (field metadata, class variables) so kio's reader and writer handle them.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.api_versions.v4.response import ApiVersion, FinalizedFeatureKey, SupportedFeatureKey
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64

__all__ = ["ApiVersionsRequest", "ApiVersionsResponse"]


class _ApiVersionsV5:
    """The class variables kio reads that request and response share."""

    __slots__ = ()
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequest(_ApiVersionsV5):
    __type__: ClassVar = EntityType.request
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    client_software_name: str = field(metadata={"kafka_type": "string"})
    client_software_version: str = field(metadata={"kafka_type": "string"})
    cluster_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    node_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse(_ApiVersionsV5):
    __type__: ClassVar = EntityType.response
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    api_keys: tuple[ApiVersion, ...]
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    supported_features: tuple[SupportedFeatureKey, ...] = field(metadata={"tag": 0}, default=())
    finalized_features_epoch: i64 = field(metadata={"kafka_type": "int64", "tag": 1}, default=i64(-1))
    finalized_features: tuple[FinalizedFeatureKey, ...] = field(metadata={"tag": 2}, default=())
    zk_migration_ready: bool = field(metadata={"kafka_type": "bool", "tag": 3}, default=False)
