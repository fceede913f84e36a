"""The chart's defaults only start controllers that this build has."""

from __future__ import annotations

from pathlib import Path

import yaml

from ocm_rollout.controllers.runtime.registry import available_controllers

VALUES = Path(__file__).resolve().parents[2] / "charts" / "ocm-rollout" / "values.yaml"


def test_default_values_enable_only_controllers_present_in_this_build() -> None:
    values = yaml.safe_load(VALUES.read_text())
    enabled = {name for name, conf in values["controllers"].items() if conf.get("enabled")}
    assert enabled, "the chart must run at least one controller by default"
    assert enabled <= set(available_controllers())
