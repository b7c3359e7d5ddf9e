"""The one exception storage raises: a Kafka error code a handler can put in its response."""

from __future__ import annotations

from protocol.errors import ErrorCode

__all__ = ["KafkaStorageError"]


class KafkaStorageError(Exception):
    """``error_code`` goes to the client as is; ``message`` is for the response's error_message
    (where the schema has one) and for logs; ``record_errors`` lists (record index, message)
    for Produce's record_errors when single records were refused."""

    def __init__(self, error_code: ErrorCode, message: str = "",
                 record_errors: list[tuple[int, str]] | tuple = ()) -> None:
        super().__init__(f"{error_code.name.upper()}: {message}" if message else error_code.name.upper())
        self.error_code = error_code
        self.message = message
        self.record_errors = record_errors
