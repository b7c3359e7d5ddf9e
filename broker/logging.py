"""structlog set-up: one line per event, JSON or human-readable, filtered by level."""

from __future__ import annotations

import logging
import sys

import structlog

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure(level: str = "info", fmt: str = "console") -> None:
    renderer = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    # Libraries that log through the standard library (asyncio, uvloop) reach the same output,
    # in the same format, through structlog.
    root = logging.getLogger()
    root.handlers[:] = [_StdlibToStructlog()]
    root.setLevel(LEVELS[level])


class _StdlibToStructlog(logging.Handler):
    """Forwards a standard-library log record to structlog under the record's logger name."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            logger = structlog.get_logger(record.name)
            fields: dict[str, object] = {"logger": record.name}
            if record.exc_info:
                fields["exc_info"] = record.exc_info
            getattr(logger, record.levelname.lower(), logger.info)(record.getMessage(), **fields)
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)
