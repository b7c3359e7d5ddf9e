"""Kafka error codes. kio's ErrorCode is an IntEnum generated from Kafka's own error table."""

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode"]
