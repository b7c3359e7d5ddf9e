"""The one exception storage raises: a Kafka error code a handler can put in its response."""

from __future__ import annotations

from minibroker.protocol.errors import ErrorCode

__all__ = ["KafkaStorageError"]


class KafkaStorageError(Exception):
    """``error_code`` goes to the client as is; ``message`` is for the response's error_message
    (where the schema has one) and for logs; ``record_errors`` lists (record index, message)
    for Produce's record_errors when single records were refused. Produce answers carry
    ``message`` only where Kafka's do: with record_errors, or when ``in_answer`` says so."""

    def __init__(
        self,
        error_code: ErrorCode,
        message: str = "",
        record_errors: list[tuple[int, str]] | tuple[tuple[int, str], ...] = (),
        *,
        in_answer: bool = False,
    ) -> None:
        super().__init__(f"{error_code.name.upper()}: {message}" if message else error_code.name.upper())
        self.error_code = error_code
        self.message = message
        self.record_errors = record_errors
        self.in_answer = in_answer or bool(record_errors)
