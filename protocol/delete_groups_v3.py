"""DeleteGroups v3, which kio 0.6.5 predates: the schema classes kio would generate.

v3 adds a per-group ErrorMessage (nullable, ignorable) to the response; the request is v2's.
The classes follow kio's conventions (field metadata, class variables) so kio's reader and
writer handle them.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import GroupId
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32Timedelta

__all__ = ["DeletableGroupResult", "DeleteGroupsRequest", "DeleteGroupsResponse"]


class _DeleteGroupsV3:
    """The class variables kio reads that every entity of this version shares."""

    __slots__ = ()
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(42)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsRequest(_DeleteGroupsV3):
    __type__: ClassVar = EntityType.request
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    groups_names: tuple[GroupId, ...] = field(metadata={"kafka_type": "string"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableGroupResult(_DeleteGroupsV3):
    __type__: ClassVar = EntityType.nested
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    group_id: GroupId = field(metadata={"kafka_type": "string"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsResponse(_DeleteGroupsV3):
    __type__: ClassVar = EntityType.response
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    results: tuple[DeletableGroupResult, ...]
