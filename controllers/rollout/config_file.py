"""The work configuration file (``config.yaml`` of OCM's ``work-controller-config`` ConfigMap,
given to ``ocm-rollout run --work-config PATH``) as a document: read, parsed as YAML, a mapping
at the top; and the checks its sections share (an entry's name, unknown keys, a CA bundle).

Each section is read by the module of the feature it configures (``plugin/config.py``:
``plugins``; ``metric_providers.py``: ``metricProviders``); ``work_config.py`` reads the file
once for all of them. Every error is a ``WorkConfigError`` whose message names the file, the
entry and the field. Pure apart from reading the file.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class WorkConfigError(ValueError):
    """The configuration file is unusable; the message names the file, the entry and the field."""


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkConfigError(f"{path}: {exc.strerror or exc}") from None


def read_document(text: str, source: str) -> Mapping[str, Any]:
    """The YAML ``text`` as a mapping (empty for an empty file)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WorkConfigError(f"{source}: not valid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise WorkConfigError(f"{source}: expected a mapping at the top, got {kind(doc)}")
    return doc


def section(doc: Mapping[str, Any], key: str, source: str) -> list[Any]:
    """The list under the top-level ``key`` (empty when the key is missing or null)."""
    entries = doc.get(key)
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise WorkConfigError(f"{source}: {key}: expected a list, got {kind(entries)}")
    return entries


def entry_name(entry: Any, where: str, known: tuple[str, ...], hints: Mapping[str, str]) -> tuple[str, str]:
    """``(name, where)`` of a section entry: a mapping whose ``name`` is a DNS-1123 subdomain and
    whose keys are all ``known`` (``hints`` adds a word to the error about an unknown key);
    ``where`` then names the entry by its name too."""
    if not isinstance(entry, Mapping):
        raise WorkConfigError(f"{where}: expected a mapping, got {kind(entry)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise WorkConfigError(f"{where}: name: required (a non-empty string)")
    where = f"{where} ({name})"
    if len(name) > 253 or not _NAME.fullmatch(name):
        raise WorkConfigError(
            f"{where}: name: must be lower-case letters, digits, '-' and '.', starting and ending "
            "with a letter or digit (a DNS-1123 subdomain)"
        )
    for key in entry:
        if key not in known:
            hint = f" ({hints[key]})" if key in hints else ""
            raise WorkConfigError(f"{where}: unknown field {key!r}{hint}; known: {', '.join(known)}")
    return name, where


def unique(names: list[str], section_key: str, source: str) -> None:
    """Refuse the second entry of a name, naming the first."""
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in first:
            raise WorkConfigError(
                f"{source}: {section_key}[{index}] ({name}): name: duplicate of {section_key}[{first[name]}]"
            )
        first[name] = index


def ca_bundle(ca: Any, where: str) -> bytes:
    """The PEM CA certificates of a ``caCertificate: {caBundle: <base64 of PEM>}`` value."""
    if not isinstance(ca, Mapping):
        raise WorkConfigError(f"{where}: expected a mapping with caBundle, got {kind(ca)}")
    extra = [k for k in ca if k != "caBundle"]
    if extra:
        raise WorkConfigError(f"{where}: unknown field {extra[0]!r}; known: caBundle")
    bundle = ca.get("caBundle")
    if not isinstance(bundle, str) or not bundle.strip():
        raise WorkConfigError(f"{where}.caBundle: required (base64 of PEM CA certificates)")
    try:
        pem = base64.b64decode("".join(bundle.split()), validate=True)
    except (binascii.Error, ValueError):
        raise WorkConfigError(f"{where}.caBundle: not valid base64") from None
    # Imported here: only a work configuration with a CA bundle needs it (7 MB in every process).
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError:
        certs = []
    if not certs:
        raise WorkConfigError(f"{where}.caBundle: holds no PEM certificate (expected base64 of PEM text)")
    return pem


def kind(value: Any) -> str:
    """What ``value`` is, for a message."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"
