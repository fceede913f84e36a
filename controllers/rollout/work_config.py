"""The work configuration file as a whole (``ocm-rollout run --work-config PATH``; OCM's
``work-controller-config`` ConfigMap, key ``config.yaml``): read once, every section of ours
validated. ``plugins`` (OCM enhancement 231) registers rollout plugins (``plugin/config.py``),
``metricProviders`` metric providers (``metric_providers.py``); other top-level keys belong to
other work settings and are left alone. Pure apart from reading the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ocm_rollout.controllers.rollout.config_file import WorkConfigError, read_document, read_text
from ocm_rollout.controllers.rollout.metric_providers import MetricProviders, providers_from
from ocm_rollout.controllers.rollout.plugin.config import PluginRegistry, registry_from

__all__ = ["WorkConfig", "WorkConfigError", "load", "parse"]


@dataclass(frozen=True)
class WorkConfig:
    """What the file registers (both empty without a file)."""

    plugins: PluginRegistry = field(default_factory=PluginRegistry)
    metric_providers: MetricProviders = field(default_factory=MetricProviders)


def load(path: str | Path) -> WorkConfig:
    """Read and validate the configuration file at ``path``; raises ``WorkConfigError``."""
    return parse(read_text(path), source=str(path))


def parse(text: str, source: str = "work config") -> WorkConfig:
    """Validate the YAML ``text`` (``source`` names it in errors)."""
    doc = read_document(text, source)
    return WorkConfig(plugins=registry_from(doc, source), metric_providers=providers_from(doc, source))
