"""UnregisterController (94) v0 (removes a KRaft controller registration), which kio 0.6.5
predates: the schema classes kio would generate. Flexible from v0; the response uses response
header v1. The classes follow kio's conventions so kio's reader and writer handle them.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta

__all__ = ["UnregisterControllerRequest", "UnregisterControllerResponse"]


class _UnregisterControllerV0:
    """The class variables kio reads that request and response share."""

    __slots__ = ()
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(94)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterControllerRequest(_UnregisterControllerV0):
    __type__: ClassVar = EntityType.request
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterControllerResponse(_UnregisterControllerV0):
    __type__: ClassVar = EntityType.response
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    # int16, not kio's ErrorCode: CONTROLLER_ID_NOT_REGISTERED (136) is newer than kio's table
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    error_message: str | None = field(metadata={"kafka_type": "string"})
