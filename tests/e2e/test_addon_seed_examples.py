"""The seed's add-on examples (examples/addons/, the OCM documentation's "Add-ons" page), applied
verbatim with kubectl to `ocm-rollout up`, do what the documentation says.

The simulated AWS clusters report the platform claim value the documentation's Placement selects
(`aws`) through a profile rule; everything else is the stock fleet.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.helpers import KUBECTL, REPO, Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e

ADDONS = REPO / "examples" / "addons"
AWS = ["cluster1", "cluster10", "cluster4", "cluster7"]
PROFILE = {
    "defaults": {"applyDelay": "100ms", "progressDuration": "300ms"},
    "clusters": [{"selector": {"matchLabels": {"cloud": "Amazon"}}, "claims": {"platform.open-cluster-management.io": "aws"}}],
}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False, input=stdin)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("addon-seed")
    profile = tmp / "aws-claims.yaml"
    profile.write_text(yaml.safe_dump(PROFILE))
    up = Up(tmp, *up_args(hub_kind), "--clusters", "10", "--profile", str(profile), "--no-view")
    try:
        kubeconfig = up.wait_kubeconfig()
        eventually(
            lambda: kubectl(kubeconfig, "get", "managedclusters", "-o", "name").stdout.count("managedcluster") == 10,
            message="10 registered clusters",
        )
        yield kubeconfig
    finally:
        up.stop()


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run(str(KUBECTL), "--kubeconfig", str(kubeconfig), *args, stdin=stdin)


def apply(kubeconfig: Path, *files: str) -> None:
    args = [a for f in files for a in ("-f", str(ADDONS / f))]
    result = kubectl(kubeconfig, "apply", *args)
    assert result.returncode == 0, result.stderr


def mcas(kubeconfig: Path) -> dict[str, Any]:
    result = kubectl(kubeconfig, "get", "managedclusteraddons", "-A", "-o", "json")
    return {m["metadata"]["namespace"]: m for m in json.loads(result.stdout or "{}").get("items", []) if m["metadata"]["name"] == "helloworld"}


def desired_names(mca: Any) -> list[str]:
    return [r["desiredConfig"]["name"] for r in (mca.get("status") or {}).get("configReferences") or []]


def test_the_seed_addon_examples_do_what_the_documentation_says(up: Path) -> None:
    # "Enable the add-on manually": the CMA, and an MCA in cluster1; kubectl shows it Available.
    apply(up, "clustermanagementaddon-helloworld.yaml", "managedclusteraddon-helloworld.yaml")
    eventually(
        lambda: "True" in (kubectl(up, "get", "managedclusteraddon", "-n", "cluster1", "helloworld").stdout.split("\n")[1:2] or [""])[0],
        timeout=90, message="helloworld Available on cluster1",
    )
    # "Install strategy": MCAs on the clusters with the aws platform claim (the hand-made one on
    # cluster1 is adopted, being selected).
    apply(up, "clustermanagementaddon-install-strategy.yaml")
    eventually(lambda: sorted(mcas(up)) == sorted(AWS), timeout=90, message="an MCA per AWS cluster")
    owners = mcas(up)["cluster1"]["metadata"].get("ownerReferences") or []
    assert [o["kind"] for o in owners] == ["ClusterManagementAddOn"]
    # "Default configurations": every add-on uses both defaults.
    apply(up, "clustermanagementaddon-default-configs.yaml")
    eventually(
        lambda: all(desired_names(m) == ["default-deploy-config", "default-example-config"] for m in mcas(up).values())
        and len(mcas(up)) == 4,
        timeout=90, message="the default configs on every add-on",
    )
    # "Configurations per install strategy": placement-aws's add-ons use its three configs.
    apply(up, "clustermanagementaddon-placement-configs.yaml")
    eventually(
        lambda: all(desired_names(m) == ["deploy-config", "example-config-1", "example-config-2"] for m in mcas(up).values()),
        timeout=90, message="the placement's configs",
    )
    # "Configurations per cluster": cluster1's own configs override by group and resource.
    apply(up, "managedclusteraddon-configs.yaml")
    eventually(
        lambda: desired_names(mcas(up)["cluster1"]) == ["cluster1-deploy-config", "cluster1-example-config"],
        timeout=90, message="cluster1's own configs",
    )
    assert desired_names(mcas(up)["cluster4"]) == ["deploy-config", "example-config-1", "example-config-2"]
    # "Supported configurations": the kinds the hub serves (exampleconfigs has no CRD here).
    supported = (mcas(up)["cluster1"].get("status") or {}).get("supportedConfigs")
    assert supported == [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}]
