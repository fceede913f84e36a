"""ocm-rollout rollout VERB [-n NS] [--kind mwrs|addon] NAME: manage a rollout, like `kubectl rollout`.

Verbs (ManifestWorkReplicaSets, --kind mwrs, the default):
  history  the template revisions (apps/v1 ControllerRevisions owned by the ManifestWorkReplicaSet),
           oldest first: REVISION, HASH, CREATED and MARKERS (current: status.currentRevision,
           update: status.updateRevision, aborted: the update revision's rollout is aborted);
           --revision N prints that revision's manifestWorkTemplate (-o yaml, the default, or json);
           -o json|yaml without --revision prints the table's rows as data
  undo     set spec.manifestWorkTemplate to revision N's (--to-revision N; default: the revision before
           the update revision), replacing the whole template at the version read
  pause    spec.paused: true (no ManifestWork is created, updated or deleted while paused)
  resume   spec.paused removed
  abort    abort the rollout in progress: annotation rollout.ocm-rollout.io/abort := status.updateRevision
  retry    retry an aborted rollout: annotation rollout.ocm-rollout.io/retry := status.abortedTime (and
           the abort annotation removed)
  promote  promote the decision group waiting for a manual promotion (rolloutStrategy.promotion) of
           a placement (--placement NAME when several placementRefs have a promotion gate; --group N
           to promote gated group N ahead of time): annotation rollout.ocm-rollout.io/promoted
           records the group for status.updateRevision (docs/behaviour/validation.md)

Add-ons (--kind addon, ClusterManagementAddOns, cluster-scoped: -n is ignored):
  pause    annotation rollout.ocm-rollout.io/paused: "true" holds the configuration rollout
  resume   that annotation removed
  abort    annotation rollout.ocm-rollout.io/abort := the revision of the desired configurations a
           placement rolls out (--placement NS/NAME when placements roll out different revisions)
  retry    annotation rollout.ocm-rollout.io/retry := the time of the abort recorded in the
           annotation rollout.ocm-rollout.io/aborted (--placement NS/NAME when they were aborted
           at different times); an abort request naming the retried revision is removed
  promote  annotation rollout.ocm-rollout.io/promoted records, under the placement NS/NAME, the
           decision group waiting at its promotion gate (--group N: gated group N ahead of time) for
           the revision of its desired configurations (--placement NS/NAME when several placements
           have a promotion gate)
  history and undo are not supported for add-ons (exit code 2).

Every verb only changes declarative state on the object (the controllers act on it, also after a
restart) and prints what it did as kubectl does, e.g.
  manifestworkreplicaset.work.open-cluster-management.io/web paused

The hub: --kubeconfig, else $KUBECONFIG, else ./.ocm-rollout/kubeconfig (the one `ocm-rollout up`
writes), else the in-cluster config when run in a pod. The namespace: -n, else the kubeconfig
context's, else "default".

Exit codes: 0 done (also when nothing had to change), 1 the object is missing or in a state the verb
cannot act on, or the API server refused, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET, LABEL_PLACEMENT
from ocm_rollout.cli.commands.rollout_verbs import (
    KINDS,
    Change,
    RolloutError,
    Target,
    abort_change,
    dump,
    find_revision,
    history_rows,
    live_history,
    pause_change,
    promote_change,
    promoted_placement,
    render_history,
    resume_change,
    retry_change,
    revision_template,
    undo_change,
)
from ocm_rollout.client.kube import (
    CONTROLLER_REVISIONS,
    PLACEMENT_DECISIONS,
    Conflict,
    Kube,
    KubeError,
    NotFound,
)
from ocm_rollout.client.kubeconfig import KubeconfigError, load_client, one_line
from ocm_rollout.controllers.common.wire import JSON, meta
from ocm_rollout.controllers.workset.revisions import owned_by
from ocm_rollout.controllers.workset.workbuild import owner_for

DEFAULT_KUBECONFIG = os.path.join(".ocm-rollout", "kubeconfig")
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
FIELD_MANAGER = "ocm-rollout-cli"
# Writes decided on an object that changed meanwhile (409) are decided again on a fresh read.
ATTEMPTS = 5

VERBS: dict[str, str] = {
    "history": "show the template revisions of a ManifestWorkReplicaSet, or one revision's template",
    "undo": "roll a ManifestWorkReplicaSet's template back to an earlier revision",
    "pause": "pause a rollout (ManifestWorkReplicaSet spec.paused, or an add-on's paused annotation)",
    "resume": "resume a paused rollout",
    "abort": "abort the rollout in progress (a ManifestWorkReplicaSet's, or an add-on's configuration rollout)",
    "retry": "retry an aborted rollout",
    "promote": "promote the decision group waiting for a manual promotion",
}
ADDON_VERBS = frozenset({"pause", "resume", "abort", "retry", "promote"})
ADDON_UNSUPPORTED: dict[str, str] = {
    "history": "ClusterManagementAddOn configurations have no revision history",
    "undo": "ClusterManagementAddOn configurations have no revision history to roll back to",
}


class UsageError(Exception):
    """Arguments that cannot work together: one line on stderr, exit code 2."""


class TargetNotFound(Exception):
    """The ManifestWorkReplicaSet or ClusterManagementAddOn does not exist."""


# -- the command line -------------------------------------------------------------------------------


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a revision number: {text!r}") from None


def _revision_number(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"revision numbers start at 1, got {value}")
    return value


def _revision_or_zero(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (the previous revision) or a revision number, got {value}")
    return value


def _group_index(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a decision group index: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"decision group indices start at 0, got {value}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="the ManifestWorkReplicaSet (or, with --kind addon, add-on)")
    parser.add_argument(
        "-n", "--namespace", default=None, metavar="NS",
        help="the ManifestWorkReplicaSet's namespace (default: the kubeconfig context's, else default)",
    )
    parser.add_argument(
        "--kind", choices=KINDS, default="mwrs",
        help="a ManifestWorkReplicaSet (mwrs, the default) or a ClusterManagementAddOn (addon)",
    )
    parser.add_argument(
        "--kubeconfig", default=None, metavar="PATH",
        help=f"kubeconfig of the hub (default: $KUBECONFIG, else {DEFAULT_KUBECONFIG}, else in-cluster)",
    )


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = sub.add_parser(
        "rollout",
        help="manage a rollout: history, undo, pause, resume, abort, retry, promote (like kubectl rollout)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=_usage(parser))
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, text in VERBS.items():
        verb_parser = verbs.add_parser(verb, help=text, description=_verb_description(verb, text))
        _common(verb_parser)
        if verb == "history":
            verb_parser.add_argument(
                "--revision", type=_revision_number, default=None, metavar="N",
                help="print revision N's manifestWorkTemplate instead of the table",
            )
            verb_parser.add_argument(
                "-o", "--output", choices=("yaml", "json"), default=None,
                help="yaml (the default with --revision) or json; without --revision, the rows as data",
            )
        if verb == "promote":
            verb_parser.add_argument(
                "--placement", default=None, metavar="NAME",
                help="the placementRef to promote (with --kind addon: the placement NS/NAME); needed when "
                "several have a promotion gate",
            )
            verb_parser.add_argument(
                "--group", type=_group_index, default=None, metavar="N",
                help="promote gated decision group N (default: the group waiting now)",
            )
        if verb in ("abort", "retry"):
            verb_parser.add_argument(
                "--placement", default=None, metavar="NS/NAME",
                help="with --kind addon: the placement whose configuration rollout to "
                + ("abort (when placements roll out different revisions)" if verb == "abort"
                   else "retry (when placements were aborted at different times)"),
            )
        if verb == "undo":
            verb_parser.add_argument(
                "--to-revision", type=_revision_or_zero, default=0, metavar="N",
                help="the revision to roll back to (default 0: the one before the update revision)",
            )
        verb_parser.set_defaults(func=main)


def _verb_description(verb: str, text: str) -> str:
    addon = {
        "pause": "With --kind addon: the ClusterManagementAddOn's rollout.ocm-rollout.io/paused annotation.",
        "resume": "With --kind addon: the ClusterManagementAddOn's rollout.ocm-rollout.io/paused annotation.",
        "abort": "With --kind addon: the ClusterManagementAddOn's rollout.ocm-rollout.io/abort annotation.",
        "retry": "With --kind addon: the ClusterManagementAddOn's rollout.ocm-rollout.io/retry annotation.",
        "promote": "With --kind addon: the ClusterManagementAddOn's rollout.ocm-rollout.io/promoted annotation.",
    }.get(verb, "ManifestWorkReplicaSets only.")
    return f"{text[0].upper()}{text[1:]}. {addon} See `ocm-rollout rollout --help`."


def _usage(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def usage(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return usage


def check_args(args: argparse.Namespace) -> None:
    """Combinations argparse cannot refuse by itself."""
    if args.kind == "addon" and args.verb not in ADDON_VERBS:
        raise UsageError(f"rollout {args.verb} is not supported for add-ons: {ADDON_UNSUPPORTED[args.verb]}")
    placement = getattr(args, "placement", None)
    if placement is not None and (args.verb != "promote" or args.kind == "addon"):
        if args.kind != "addon":
            raise UsageError("--placement applies to add-ons only (--kind addon)")
        namespace, _, name = placement.partition("/")
        if not namespace or not name or "/" in name:
            raise UsageError(f"--placement: {placement!r} is not NAMESPACE/NAME")


# -- the hub ----------------------------------------------------------------------------------------


def kubeconfig_path(flag: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The kubeconfig to use; None: the in-cluster config (in a pod, without any kubeconfig)."""
    env = os.environ if env is None else env
    if flag:
        return flag
    from_env = env.get("KUBECONFIG", "")
    first = from_env.split(os.pathsep)[0] if from_env else ""
    if first:
        return first
    if not os.path.exists(DEFAULT_KUBECONFIG) and env.get("KUBERNETES_SERVICE_HOST"):
        return None
    return DEFAULT_KUBECONFIG


def context_namespace(path: str | None) -> str:
    """The namespace of the kubeconfig's current context (in a pod: the service account's), else default."""
    try:
        if path is None:
            with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as handle:
                return handle.read().strip() or "default"
        _, active = kubernetes.config.list_kube_config_contexts(config_file=os.path.expanduser(path))
        namespace = ((active or {}).get("context") or {}).get("namespace")
        return str(namespace) if namespace else "default"
    except Exception:  # an unreadable context is the API client's error to report, not ours
        return "default"


# -- the verbs --------------------------------------------------------------------------------------


async def _read(kube: Kube, target: Target) -> JSON:
    try:
        return await kube.get(target.resource, target.name, target.namespace)
    except NotFound:
        raise TargetNotFound() from None


async def _revisions(kube: Kube, target: Target, mwrs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ControllerRevisions of ``mwrs`` (its owner label, and a controller reference to its uid)."""
    owner = owner_for(target.namespace or "", target.name)
    found = await kube.list_objects(
        CONTROLLER_REVISIONS, target.namespace, label_selector=f"{LABEL_MANIFESTWORK_REPLICASET}={owner.label_value}"
    )
    uid = str(meta(mwrs).get("uid") or "")
    return live_history(r for r in found if owned_by(r, uid))


async def _history(kube: Kube, target: Target, args: argparse.Namespace) -> str:
    mwrs = await _read(kube, target)
    revisions = await _revisions(kube, target, mwrs)
    if args.revision is not None:
        template = revision_template(find_revision(target, revisions, args.revision))
        return dump(template, args.output or "yaml")
    rows = history_rows(mwrs, revisions)
    if args.output is not None:
        return dump([r.as_json() for r in rows], args.output)
    return render_history(target, rows) + "\n"


@dataclass(frozen=True)
class VerbRequest:
    """One state-changing verb and its options, as the command line or the dashboard gives them."""

    verb: str
    placement: str | None = None
    group: int | None = None
    to_revision: int = 0


def request_of(args: argparse.Namespace) -> VerbRequest:
    return VerbRequest(
        args.verb, getattr(args, "placement", None), getattr(args, "group", None), getattr(args, "to_revision", 0) or 0
    )


async def decide(kube: Kube, target: Target, request: VerbRequest) -> Change:
    """What ``request`` writes on ``target``, decided on a fresh read of it."""
    obj = await _read(kube, target)
    if request.verb == "pause":
        return pause_change(target, obj)
    if request.verb == "resume":
        return resume_change(target, obj)
    if target.kind == "addon":
        # The add-on manager's own definitions; imported here so that the other verbs never
        # depend on them.
        from ocm_rollout.cli.commands import rollout_addon

        if request.verb == "promote":
            node = rollout_addon.promoted_placement(target, obj, request.placement)
            decisions = await kube.list_objects(
                PLACEMENT_DECISIONS, node.namespace, label_selector=f"{LABEL_PLACEMENT}={node.name}"
            )
            return rollout_addon.promote_change(target, obj, node, decisions, request.group)
        if request.verb not in ("abort", "retry"):
            raise RolloutError(f"rollout {request.verb} is not supported for add-ons")
        decide_addon = rollout_addon.abort_change if request.verb == "abort" else rollout_addon.retry_change
        return decide_addon(target, obj, request.placement)
    if request.verb == "promote":
        ref = promoted_placement(target, obj, request.placement)
        decisions = await kube.list_objects(
            PLACEMENT_DECISIONS, target.namespace, label_selector=f"{LABEL_PLACEMENT}={ref.get('name')}"
        )
        return promote_change(target, obj, ref, decisions, request.group)
    if request.verb == "abort":
        return abort_change(target, obj)
    if request.verb == "retry":
        return retry_change(target, obj)
    if request.verb == "undo":
        return undo_change(target, obj, await _revisions(kube, target, obj), request.to_revision)
    raise RolloutError(f"unknown rollout verb {request.verb!r}")


async def change(kube: Kube, target: Target, request: VerbRequest) -> str:
    """Decide ``request`` on a fresh read and write it (decided again after a 409, up to
    ``ATTEMPTS`` times); returns the line kubectl would print."""
    for attempt in range(1, ATTEMPTS + 1):
        decided = await decide(kube, target, request)
        if decided.patch is None:
            return decided.message
        try:
            await kube.patch(target.resource, target.name, decided.patch, target.namespace)
        except NotFound:
            raise TargetNotFound() from None
        except Conflict:
            if attempt == ATTEMPTS:
                raise
            continue
        return decided.message
    raise AssertionError("unreachable")


async def run_verb(kube: Kube, target: Target, args: argparse.Namespace) -> str:
    """What to print on stdout once the verb is done."""
    if args.verb == "history":
        return await _history(kube, target, args)
    return await change(kube, target, request_of(args)) + "\n"


def main(args: argparse.Namespace) -> int:
    try:
        check_args(args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = kubeconfig_path(args.kubeconfig)
    if path is not None and not os.path.exists(os.path.expanduser(path)):
        hint = " (start a local hub with `ocm-rollout up`, or pass --kubeconfig)" if args.kubeconfig is None else ""
        print(f"error: kubeconfig {path} does not exist{hint}", file=sys.stderr)
        return 1
    try:
        kube = Kube(load_client(path), field_manager=FIELD_MANAGER)
    except KubeconfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    namespace = None if args.kind == "addon" else (args.namespace or context_namespace(path))
    target = Target(args.kind, args.name, namespace)
    where = path or "the in-cluster config"
    try:
        text = asyncio.run(run_verb(kube, target, args))
    except TargetNotFound:
        print(target.not_found(), file=sys.stderr)
        return 1
    except RolloutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KubeError as exc:
        print(f"Error from server ({exc.reason}): {exc.message}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot reach the API server of {where}: {one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # urllib3 wraps connection failures in its own types
        if type(exc).__module__.startswith("urllib3"):
            print(f"error: cannot reach the API server of {where}: {one_line(exc)}", file=sys.stderr)
            return 1
        raise
    sys.stdout.write(text)
    return 0

