"""Structured logs: one event per line, the object key first (``--log-format json|text``).

JSON lines carry ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``object`` (``namespace/name``
when the record concerns one object: kopf's per-object loggers, or an ``extra`` ``key`` /
``object``), ``msg``, then every other ``extra`` field, and ``exc`` with the traceback if any.
Text lines hold the same fields, human-ordered.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

FORMATS: Final = ("json", "text")
LEVELS: Final = ("debug", "info", "warning", "error")

# Attributes every LogRecord has; anything else came in through ``extra``.
_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    # kopf's per-object logger internals: rendered as ``object``, not repeated.
    "k8s_ref",
    "k8s_skip",
    "settings",
}


class LogConfigError(ValueError):
    """An unknown ``--log-format`` or ``--log-level``."""


def object_key(record: logging.LogRecord) -> str | None:
    ref = getattr(record, "k8s_ref", None)
    if isinstance(ref, dict) and ref.get("name"):
        namespace = ref.get("namespace")
        return f"{namespace}/{ref['name']}" if namespace else str(ref["name"])
    for attr in ("object", "key"):
        value = getattr(record, attr, None)
        if value:
            return str(value)
    return None


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {
        k: v for k, v in vars(record).items() if k not in _STANDARD and k not in ("object", "key") and not k.startswith("_")
    }


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {"time": _timestamp(record), "level": record.levelname.lower(), "logger": record.name}
        key = object_key(record)
        if key is not None:
            event["object"] = key
        event["msg"] = record.getMessage()
        for name, value in _extras(record).items():
            event.setdefault(name, value)
        if record.exc_info:
            event["exc"] = self.formatException(record.exc_info)
        return json.dumps(event, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), f"{record.levelname:<7}", record.name]
        key = object_key(record)
        if key is not None:
            parts.append(f"[{key}]")
        parts.append(record.getMessage())
        parts.extend(f"{name}={value}" for name, value in _extras(record).items())
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class _DropKopfThreadWarning(logging.Filter):
    """kopf warns that it ignores OS signals when run outside the main thread; we run it in
    its own thread on purpose and handle the signals ourselves."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("OS signals are ignored")


def configure(fmt: str = "text", level: str = "info", *, stream: TextIO | None = None) -> logging.Handler:
    """Install one handler on the root logger (replacing earlier ones from this function)."""
    if fmt not in FORMATS:
        raise LogConfigError(f"--log-format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if level.lower() not in LEVELS:
        raise LogConfigError(f"--log-level must be one of {', '.join(LEVELS)}, got {level!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(_DropKopfThreadWarning())
    handler.set_name("ocm-rollout")
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == "ocm-rollout":
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # kopf's own chatter at debug level is very verbose; keep it one step quieter than ours.
    logging.getLogger("kopf").setLevel(max(logging.INFO, root.level))
    # kopf logs every successful event handler per object at info level (one line per watch
    # event of every cached kind); only its warnings and errors matter unless debugging.
    logging.getLogger("kopf.objects").setLevel(logging.DEBUG if root.level <= logging.DEBUG else logging.WARNING)
    return handler
