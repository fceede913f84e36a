"""Fixtures shared by unit test modules.

- `chart`: the project's Helm chart (charts/ocm-rollout) loaded once per module
  (``helm_python.Chart``), closed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest

from tests.unit.helpers import CHART


@pytest.fixture(scope="module")
def chart() -> Iterator[Any]:
    loaded = helm.Chart.load(CHART)
    yield loaded
    loaded.close()
