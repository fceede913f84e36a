"""Fixtures shared by unit test modules.

- `chart`: the project's Helm chart (charts/ocm-rollout) loaded once per module
  (``helm_python.Chart``), closed afterwards.
- `kubeconfig`: the path of a kubeconfig for a hub nobody serves (``run`` checks its flags
  before it sends any request).
- `restore_logging`: puts back the log levels ``run`` and ``configure`` set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from tests.unit.helpers import CHART


@pytest.fixture(scope="module")
def chart() -> Iterator[Any]:
    loaded = helm.Chart.load(CHART)
    yield loaded
    loaded.close()


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "http://127.0.0.1:6443"}}]
users: [{name: me, user: {token: sekret}}]
contexts: [{name: hub, context: {cluster: hub, user: me}}]
current-context: hub
"""


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return str(path)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    names = ("", "kopf", "kopf.objects")
    levels = {name: logging.getLogger(name).level for name in names}
    handlers = list(logging.getLogger().handlers)
    yield None
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
