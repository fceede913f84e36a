"""`ocm-rollout rollout`: argument parsing, the hub and namespace it picks, and the exact lines it
prints (no hub here: tests/e2e/test_rollout_cli.py runs every verb against one)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from ocm_rollout.cli.commands import rollout
from ocm_rollout.cli.commands.rollout import check_args, context_namespace, kubeconfig_path
from ocm_rollout.cli.commands.rollout_verbs import Target
from ocm_rollout.cli.main import build_parser, main
from ocm_rollout.client.kube import JSON, Conflict, Kube, NotFound, Resource

MWRS_ID = "manifestworkreplicaset.work.open-cluster-management.io/web"


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["rollout", *argv])


def test_every_verb_parses_with_the_common_flags() -> None:
    for verb in ("history", "undo", "pause", "resume", "abort", "retry"):
        args = parse(verb, "-n", "ns1", "--kubeconfig", "/k", "web")
        assert (args.verb, args.name, args.namespace, args.kind, args.kubeconfig) == (verb, "web", "ns1", "mwrs", "/k")
        assert args.func is rollout.main


def test_the_defaults() -> None:
    args = parse("pause", "web")
    assert (args.namespace, args.kind, args.kubeconfig) == (None, "mwrs", None)
    history = parse("history", "web")
    assert (history.revision, history.output) == (None, None)
    assert parse("undo", "web").to_revision == 0
    assert parse("undo", "web", "--to-revision", "3").to_revision == 3
    assert parse("undo", "--to-revision", "0", "web").to_revision == 0
    assert parse("history", "web", "--revision", "2", "-o", "json").revision == 2
    assert parse("pause", "--kind", "addon", "my-addon").kind == "addon"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["history", "web", "--revision", "0"], "revision numbers start at 1, got 0"),
        (["history", "web", "--revision", "two"], "not a revision number: 'two'"),
        (["history", "web", "-o", "table"], "invalid choice: 'table'"),
        (["undo", "web", "--to-revision", "-1"], "must be 0 (the previous revision) or a revision number, got -1"),
        (["pause"], "the following arguments are required: NAME"),
        (["pause", "web", "--kind", "deployment"], "invalid choice: 'deployment'"),
        (["restart", "web"], "invalid choice: 'restart'"),
        (["pause", "web", "--to-revision", "1"], "unrecognized arguments: --to-revision 1"),
    ],
)
def test_bad_arguments_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["rollout", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_without_a_verb_the_help_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rollout"]) == 2
    err = capsys.readouterr().err
    assert "usage: ocm-rollout rollout" in err


@pytest.mark.parametrize("verb", ["history", "undo"])
def test_addon_verbs_without_semantics_exit_2_before_any_hub(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rollout", verb, "--kind", "addon", "--kubeconfig", str(tmp_path / "none"), "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: rollout {verb} is not supported for add-ons: ")
    assert err.count("\n") == 1


def test_addon_pause_resume_abort_and_retry_are_accepted() -> None:
    for verb in ("pause", "resume", "abort", "retry"):
        check_args(parse(verb, "--kind", "addon", "x"))
    for verb in ("abort", "retry"):
        args = parse(verb, "--kind", "addon", "--placement", "ns1/p1", "x")
        check_args(args)
        assert args.placement == "ns1/p1"
        assert parse(verb, "web").placement is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["abort", "--placement", "ns1/p1", "web"], "error: --placement applies to add-ons only (--kind addon)\n"),
        (["retry", "--kind", "addon", "--placement", "p1", "x"], "error: --placement: 'p1' is not NAMESPACE/NAME\n"),
        (["abort", "--kind", "addon", "--placement", "a/b/c", "x"], "error: --placement: 'a/b/c' is not NAMESPACE/NAME\n"),
    ],
)
def test_placement_is_checked_before_any_hub(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rollout", *argv, "--kubeconfig", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err == message


def test_help_documents_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["rollout", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for verb in ("history", "undo", "pause", "resume", "abort", "retry"):
        assert f"\n  {verb} " in out
        assert f"\n    {verb} " in out
    for word in ("--to-revision", "--revision", "rollout.ocm-rollout.io/abort", "rollout.ocm-rollout.io/retry",
                 "rollout.ocm-rollout.io/paused", "spec.paused", "--kind addon", "Exit codes"):
        assert word in out


def test_the_other_commands_are_still_there(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("up", "run", "status", "rollout", "schedule", "plan", "crds"):
        assert f"\n    {command} " in out


def test_a_missing_kubeconfig_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope"
    assert main(["rollout", "pause", "--kubeconfig", str(path), "web"]) == 1
    assert capsys.readouterr().err == f"error: kubeconfig {path} does not exist\n"


# -- the hub and the namespace --------------------------------------------------------------------


def test_kubeconfig_path_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert kubeconfig_path("/flag", {"KUBECONFIG": "/env"}) == "/flag"
    assert kubeconfig_path(None, {"KUBECONFIG": "/env:/second"}) == "/env"
    assert kubeconfig_path(None, {}) == rollout.DEFAULT_KUBECONFIG
    # In a pod without any kubeconfig: the in-cluster config.
    assert kubeconfig_path(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) is None
    (tmp_path / ".ocm-rollout").mkdir()
    (tmp_path / rollout.DEFAULT_KUBECONFIG).write_text("{}")
    assert kubeconfig_path(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) == rollout.DEFAULT_KUBECONFIG


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: me
  user: {token: t}
contexts:
- name: with-ns
  context: {cluster: hub, user: me, namespace: team-a}
- name: without-ns
  context: {cluster: hub, user: me}
current-context: CURRENT
"""


def test_the_namespace_defaults_to_the_context_s(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG.replace("CURRENT", "with-ns"))
    assert context_namespace(str(path)) == "team-a"
    path.write_text(KUBECONFIG.replace("CURRENT", "without-ns"))
    assert context_namespace(str(path)) == "default"
    assert context_namespace(str(tmp_path / "missing")) == "default"


# -- writing: a fresh decision after a conflict, NotFound of the object ------------------------------


class FakeKube:
    """Answers get and list from ``objects``; the first ``conflicts`` patches are 409s."""

    def __init__(self, objects: list[JSON], conflicts: int = 0) -> None:
        self.objects = objects
        self.conflicts = conflicts
        self.reads = 0
        self.patches: list[Any] = []

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> JSON:
        self.reads += 1
        if not self.objects:
            raise NotFound(404, "NotFound", f'{res.plural}.{res.group} "{name}" not found')
        return self.objects[min(self.reads, len(self.objects)) - 1]

    async def list_objects(self, res: Resource, namespace: str | None = None, **_: Any) -> list[JSON]:
        return []

    async def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None) -> JSON:
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict(409, "Conflict", "the object has been modified")
        self.patches.append(patch)
        return {}


def _run(kube: FakeKube, *argv: str) -> str:
    args = parse(*argv)
    target = Target(args.kind, args.name, None if args.kind == "addon" else "ns1")
    return asyncio.run(rollout.run_verb(cast(Kube, kube), target, args))


def _mwrs(paused: bool) -> JSON:
    return {"metadata": {"name": "web", "namespace": "ns1", "uid": "u1", "resourceVersion": "1"},
            "spec": {"paused": paused}}


def test_a_conflict_is_decided_again_on_a_fresh_read() -> None:
    kube = FakeKube([_mwrs(False), _mwrs(False)], conflicts=1)
    assert _run(kube, "pause", "web") == f"{MWRS_ID} paused\n"
    assert (kube.reads, kube.patches) == (2, [{"spec": {"paused": True}}])
    # Paused meanwhile: nothing left to write.
    kube = FakeKube([_mwrs(False), _mwrs(True)], conflicts=1)
    assert _run(kube, "pause", "web") == f"{MWRS_ID} already paused\n"
    assert kube.patches == []


def test_conflicts_give_up_after_some_attempts() -> None:
    kube = FakeKube([_mwrs(False)], conflicts=rollout.ATTEMPTS)
    with pytest.raises(Conflict):
        _run(kube, "pause", "web")
    assert kube.reads == rollout.ATTEMPTS


def test_a_missing_object_is_the_target_s_not_found() -> None:
    with pytest.raises(rollout.TargetNotFound):
        _run(FakeKube([]), "resume", "web")
