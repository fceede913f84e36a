"""`ocm-rollout rollout` as a user runs it, against `ocm-rollout up` without controllers: a
ManifestWorkReplicaSet and its ControllerRevisions made by hand (the conventions of
controllers/workset/revisions.py), its status set as the controller would, and every verb checked
by what it wrote."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.api.constants import (
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_RETRY,
)
from ocm_rollout.cli import main as cli
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    CONTROLLER_REVISIONS,
    JSON,
    MANIFEST_WORK_REPLICA_SETS,
    NAMESPACES,
    Kube,
)
from ocm_rollout.client.kubeconfig import load_client
from ocm_rollout.controllers.addon import abort as addon_abort
from ocm_rollout.controllers.addon.configs import Config, DesiredConfigs
from ocm_rollout.controllers.workset.revisions import revision_body, template_hash
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.e2e.helpers import OCM_ROLLOUT, Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e

NS = "rollout-cli"
NAME = "web"
ADDON = "demo-addon"
PLACEMENT = "all"
ADC = (ADDON_GROUP, ADDON_DEPLOYMENT_CONFIG_RESOURCE)
MWRS_ID = f"manifestworkreplicaset.work.open-cluster-management.io/{NAME}"
ADDON_ID = f"clustermanagementaddon.addon.open-cluster-management.io/{ADDON}"


def template(version: str) -> JSON:
    return {
        "workload": {
            "manifests": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "web-config", "namespace": "default"},
                    "data": {"version": version, **({"only-in-v1": "x"} if version == "v1" else {})},
                }
            ]
        }
    }


@dataclass
class Hub:
    kubeconfig: Path
    kube: Kube
    templates: dict[int, JSON]  # revision number -> the template as the hub stores it
    hashes: dict[int, str]

    def call(self, coro: Any) -> Any:
        return asyncio.run(coro)

    def mwrs(self) -> JSON:
        return dict(self.call(self.kube.get(MANIFEST_WORK_REPLICA_SETS, NAME, NS)))

    def cma(self) -> JSON:
        return dict(self.call(self.kube.get(CLUSTER_MANAGEMENT_ADDONS, ADDON)))

    def set_status(self, **fields: Any) -> None:
        self.call(self.kube.patch_status(MANIFEST_WORK_REPLICA_SETS, NAME, {"status": fields}, NS))

    def set_template(self, value: JSON) -> None:
        patch = [{"op": "replace", "path": "/spec/manifestWorkTemplate", "value": value}]
        self.call(self.kube.patch(MANIFEST_WORK_REPLICA_SETS, NAME, patch, NS))

    def rollout(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`ocm-rollout rollout ARGS` as a subprocess (with --kubeconfig unless ``env`` is given)."""
        flags = [] if env else ["--kubeconfig", str(self.kubeconfig)]
        return subprocess.run(
            [str(OCM_ROLLOUT), "rollout", args[0], *flags, *args[1:]],
            capture_output=True, text=True, timeout=60, check=False, env=env,
        )

    def quick(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The same in this process: the same code from the parser on, without a second of start-up
        (the subprocess runs above cover the entry point)."""
        argv = ["rollout", args[0], "--kubeconfig", str(self.kubeconfig), *args[1:]]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:
                code = int(exc.code or 0)
        return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


async def _seed(kube: Kube) -> tuple[dict[int, JSON], dict[int, str]]:
    """The MWRS at template v3 with revisions 1 (v1), 2 (v2), 3 (v3), each recorded as the hub
    stores the template; a ControllerRevision with its owner label but another owner (not its)."""
    await kube.create(NAMESPACES, {"metadata": {"name": NS}})
    mwrs = await kube.create(
        MANIFEST_WORK_REPLICA_SETS,
        {
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"placementRefs": [{"name": "all"}], "manifestWorkTemplate": template("v1")},
        },
        NS,
    )
    label = owner_for(NS, NAME).label_value
    templates: dict[int, JSON] = {}
    hashes: dict[int, str] = {}
    for number, version in enumerate(("v1", "v2", "v3"), start=1):
        if number > 1:
            patch = [{"op": "replace", "path": "/spec/manifestWorkTemplate", "value": template(version)}]
            mwrs = await kube.patch(MANIFEST_WORK_REPLICA_SETS, NAME, patch, NS)
        stored = mwrs["spec"]["manifestWorkTemplate"]
        digest = template_hash(stored)
        await kube.create(CONTROLLER_REVISIONS, revision_body(mwrs, label, stored, digest, number), NS)
        templates[number], hashes[number] = stored, digest
    stranger = revision_body({**mwrs, "metadata": {**mwrs["metadata"], "uid": "another-uid"}}, label,
                             template("v9"), "stranger", 9)
    await kube.create(CONTROLLER_REVISIONS, stranger, NS)
    await _seed_addon(kube)
    return templates, hashes


async def _seed_addon(kube: Kube) -> None:
    """A ClusterManagementAddOn rolling deploy-config out (spec hash h2, last known good h1) to
    the clusters of Placement default/all, its status as the add-on manager writes it."""
    placement = {"namespace": NS, "name": PLACEMENT, "rolloutStrategy": {"type": "All"}}
    spec = {"supportedConfigs": [{"group": ADC[0], "resource": ADC[1]}],
            "installStrategy": {"type": "Placements", "placements": [placement]}}
    await kube.create(CLUSTER_MANAGEMENT_ADDONS, {"metadata": {"name": ADDON}, "spec": spec})

    def referent(spec_hash: str) -> JSON:
        return {"namespace": NS, "name": "deploy-config", "specHash": spec_hash}

    item = {"group": ADC[0], "resource": ADC[1], "desiredConfig": referent("h2"), "lastKnownGoodConfig": referent("h1")}
    status = {"installProgressions": [{"namespace": NS, "name": PLACEMENT, "configReferences": [item]}]}
    await kube.patch_status(CLUSTER_MANAGEMENT_ADDONS, ADDON, {"status": status})


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Hub]:
    up = Up(tmp_path_factory.mktemp("rollout-cli"), *up_args(hub_kind), "--clusters", "0", "--controllers", "none", "--no-view")
    try:
        kubeconfig = up.wait_kubeconfig()
        kube = Kube(load_client(str(kubeconfig)))
        templates, hashes = asyncio.run(_seed(kube))
        yield Hub(kubeconfig, kube, templates, hashes)
    finally:
        up.stop()


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout


def test_history_lists_the_owned_revisions_with_markers(hub: Hub) -> None:
    hub.set_status(currentRevision=hub.hashes[2], updateRevision=hub.hashes[3])
    lines = ok(hub.rollout("history", "-n", NS, NAME)).splitlines()
    assert lines[0] == MWRS_ID
    assert lines[1].split() == ["REVISION", "HASH", "CREATED", "MARKERS"]
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == ["1", "2", "3"]  # the other owner's revision 9 is not listed
    assert [r[1] for r in rows] == [hub.hashes[1], hub.hashes[2], hub.hashes[3]]
    assert [r[3:] for r in rows] == [[], ["current"], ["update"]]
    assert all(r[2].endswith("Z") for r in rows)

    as_json = json.loads(ok(hub.quick("history", "-n", NS, NAME, "-o", "json")))
    assert [(r["revision"], r["current"], r["update"]) for r in as_json] == [(1, False, False), (2, True, False),
                                                                             (3, False, True)]


def test_history_prints_one_revisions_template(hub: Hub) -> None:
    assert yaml.safe_load(ok(hub.rollout("history", "-n", NS, NAME, "--revision", "1"))) == hub.templates[1]
    out = ok(hub.quick("history", "-n", NS, NAME, "--revision", "2", "-o", "json"))
    assert json.loads(out) == hub.templates[2]

    missing = hub.quick("history", "-n", NS, NAME, "--revision", "9")
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"error: revision 9 not found in the history of {MWRS_ID} (revisions: 1, 2, 3)"


def test_pause_and_resume_set_spec_paused(hub: Hub) -> None:
    assert ok(hub.rollout("pause", "-n", NS, NAME)) == f"{MWRS_ID} paused\n"
    assert hub.mwrs()["spec"]["paused"] is True
    assert ok(hub.quick("pause", "-n", NS, NAME)) == f"{MWRS_ID} already paused\n"
    assert ok(hub.rollout("resume", "-n", NS, NAME)) == f"{MWRS_ID} resumed\n"
    assert "paused" not in hub.mwrs()["spec"]
    assert ok(hub.quick("resume", "-n", NS, NAME)) == f"{MWRS_ID} not paused\n"


def test_abort_then_retry_write_their_annotations(hub: Hub) -> None:
    hub.set_status(currentRevision=hub.hashes[2], updateRevision=hub.hashes[3], abortedTime=None)
    assert ok(hub.rollout("abort", "-n", NS, NAME)) == f"{MWRS_ID} aborted (update revision {hub.hashes[3]})\n"
    assert hub.mwrs()["metadata"]["annotations"][ANNOTATION_ROLLOUT_ABORT] == hub.hashes[3]
    again = ok(hub.quick("abort", "-n", NS, NAME))
    assert again == f"{MWRS_ID} abort already requested (update revision {hub.hashes[3]})\n"

    not_aborted = hub.quick("retry", "-n", NS, NAME)
    assert not_aborted.returncode == 1
    assert not_aborted.stderr.strip() == f"error: {MWRS_ID} is not aborted (status.abortedTime is not set)"

    # The controller acts on the abort.
    hub.set_status(abortedTime="2024-05-01T12:00:00Z")
    out = ok(hub.rollout("retry", "-n", NS, NAME))
    assert out == f"{MWRS_ID} retried (aborted at 2024-05-01T12:00:00Z)\n"
    annotations = hub.mwrs()["metadata"]["annotations"]
    assert annotations[ANNOTATION_ROLLOUT_RETRY] == "2024-05-01T12:00:00Z"
    assert ANNOTATION_ROLLOUT_ABORT not in annotations
    again = ok(hub.quick("retry", "-n", NS, NAME))
    assert again == f"{MWRS_ID} retry already requested (aborted at 2024-05-01T12:00:00Z)\n"
    hub.set_status(abortedTime=None)


def test_abort_without_a_rollout_in_progress_is_an_error(hub: Hub) -> None:
    hub.set_status(currentRevision=hub.hashes[3], updateRevision=hub.hashes[3])
    try:
        result = hub.quick("abort", "-n", NS, NAME)
    finally:
        hub.set_status(currentRevision=hub.hashes[2], updateRevision=hub.hashes[3])
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: {MWRS_ID} has no rollout in progress to abort (updateRevision equals currentRevision {hub.hashes[3]})"
    )


def test_undo_replaces_the_whole_template(hub: Hub) -> None:
    hub.set_status(currentRevision=hub.hashes[2], updateRevision=hub.hashes[3])
    try:
        # Default: the revision before the update revision (3).
        assert ok(hub.rollout("undo", "-n", NS, NAME)) == f"{MWRS_ID} rolled back to revision 2\n"
        assert hub.mwrs()["spec"]["manifestWorkTemplate"] == hub.templates[2]
        skipped = ok(hub.quick("undo", "-n", NS, NAME, "--to-revision", "2"))
        assert skipped == f"{MWRS_ID} skipped rollback (current template already matches revision 2)\n"
        # v1 has a key v2 lacks: a merge would keep the current one.
        assert ok(hub.quick("undo", "-n", NS, NAME, "--to-revision", "1")) == f"{MWRS_ID} rolled back to revision 1\n"
        assert hub.mwrs()["spec"]["manifestWorkTemplate"] == hub.templates[1]
        hub.set_template(hub.templates[3])
        assert ok(hub.quick("undo", "-n", NS, NAME, "--to-revision", "3")) == (
            f"{MWRS_ID} skipped rollback (current template already matches revision 3)\n"
        )
        missing = hub.quick("undo", "-n", NS, NAME, "--to-revision", "7")
        assert missing.returncode == 1
        assert "revision 7 not found" in missing.stderr
    finally:
        hub.set_template(hub.templates[3])


def test_addon_pause_and_resume_use_the_annotation(hub: Hub) -> None:
    assert ok(hub.rollout("pause", "--kind", "addon", ADDON)) == f"{ADDON_ID} paused\n"
    assert hub.cma()["metadata"]["annotations"][ANNOTATION_ROLLOUT_PAUSED] == "true"
    assert ok(hub.quick("resume", "--kind", "addon", ADDON)) == f"{ADDON_ID} resumed\n"
    assert ANNOTATION_ROLLOUT_PAUSED not in (hub.cma()["metadata"].get("annotations") or {})
    for verb in ("history", "undo"):
        result = (hub.rollout if verb == "history" else hub.quick)(verb, "--kind", "addon", ADDON)
        assert result.returncode == 2
        assert result.stderr.startswith(f"error: rollout {verb} is not supported for add-ons: ")


def test_addon_abort_and_retry_write_their_annotations(hub: Hub) -> None:
    """The add-on manager's requests (controllers/addon/abort.py): abort names the revision of the
    desired configurations a placement rolls out, retry the time of the recorded abort."""
    # `up` plays the add-on framework's hub side, which sets the spec hash of deploy-config (not
    # created: "") where the seed wrote h2; the revision is that of what the CMA shows then.
    def desired_hash() -> tuple[str] | None:
        item = hub.cma()["status"]["installProgressions"][0]["configReferences"][0]
        found = str(item["desiredConfig"].get("specHash", ""))
        return None if found == "h2" else (found,)

    (spec_hash,) = eventually(desired_hash, message="the simulated framework's spec hash")
    revision = addon_abort.revision(
        DesiredConfigs({ADC: [Config(*ADC, NS, "deploy-config", spec_hash)]})
    )
    out = ok(hub.rollout("abort", "--kind", "addon", ADDON))
    assert out == f"{ADDON_ID} aborted (revision {revision})\n"
    assert hub.cma()["metadata"]["annotations"][ANNOTATION_ROLLOUT_ABORT] == revision

    not_aborted = hub.quick("retry", "--kind", "addon", ADDON)
    assert not_aborted.returncode == 1
    assert not_aborted.stderr == f"error: {ADDON_ID} is not aborted (no {addon_abort.ANNOTATION} record)\n"

    # The add-on manager acts on the request: its record of the abort.
    time = "2024-05-01T12:00:00.000001Z"
    entry = {"time": time, "revision": revision, "cause": "requested", "clusters": [], "failed": 0}
    annotations = {addon_abort.ANNOTATION: json.dumps({f"{NS}/{PLACEMENT}": entry})}
    hub.call(hub.kube.patch(CLUSTER_MANAGEMENT_ADDONS, ADDON, {"metadata": {"annotations": annotations}}))
    assert ok(hub.rollout("retry", "--kind", "addon", ADDON)) == f"{ADDON_ID} retried (aborted at {time})\n"
    annotations = hub.cma()["metadata"]["annotations"]
    assert annotations[ANNOTATION_ROLLOUT_RETRY] == time
    assert ANNOTATION_ROLLOUT_ABORT not in annotations  # a requested abort is retried by its removal too


def test_an_unknown_name_is_not_found(hub: Hub) -> None:
    for verb in ("pause", "history", "undo"):
        result = (hub.rollout if verb == "pause" else hub.quick)(verb, "-n", NS, "nosuch")
        assert result.returncode == 1
        assert result.stderr.strip() == (
            'Error from server (NotFound): manifestworkreplicasets.work.open-cluster-management.io "nosuch" not found'
        )
    result = hub.quick("pause", "--kind", "addon", "nosuch")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (NotFound): clustermanagementaddons.addon.open-cluster-management.io "nosuch" not found'
    )


def test_the_kubeconfig_comes_from_the_environment(hub: Hub) -> None:
    env = {**os.environ, "KUBECONFIG": str(hub.kubeconfig)}
    lines = ok(hub.rollout("history", "-n", NS, NAME, env=env)).splitlines()
    assert lines[0] == MWRS_ID
    assert len(lines) == 5
