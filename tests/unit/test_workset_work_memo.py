"""``WorkMemo`` keeps what a pass derives from each work between passes: the plan and the status it
gives must be exactly those of deriving everything afresh (``DIRECT``), after any sequence of work
changes: the property test below runs random event sequences through both."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocm_rollout.api.constants import LABEL_DECISION_GROUP_INDEX, LABEL_PLACEMENT, LABEL_PLACEMENT_NAME
from ocm_rollout.controllers.common.wire import JSON, format_time
from ocm_rollout.controllers.rollout.reservations import EMPTY
from ocm_rollout.controllers.workset import aggregation, history
from ocm_rollout.controllers.workset.aggregation import DeployOutcome
from ocm_rollout.controllers.workset.indexes import Forms
from ocm_rollout.controllers.workset.planning import PlanInputs, Plans, plan_and_decide
from ocm_rollout.controllers.workset.template import form_hash, normal_spec
from ocm_rollout.controllers.workset.work_memo import DIRECT, WorkMemo, condition_counts
from ocm_rollout.controllers.workset.workbuild import owner_for

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CLUSTERS = [f"c{i}" for i in range(8)]
TEMPLATES: list[JSON] = [
    {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "app", "namespace": "default"}, "data": {"v": str(v)}}]}}
    for v in (1, 2)
]
STRATEGIES: list[JSON] = [
    {"type": "All"},
    {"type": "Progressive", "progressive": {"maxConcurrency": 2}},
    {"type": "Progressive", "progressive": {"maxConcurrency": "25%", "maxFailures": 1, "progressDeadline": "60s"}},
    {"type": "ProgressivePerGroup", "progressivePerGroup": {"maxFailures": "50%"}},
]
CONDITION_TYPES = ["Applied", "Progressing", "Available", "Degraded"]


def mwrs(template: JSON, strategy: JSON) -> JSON:
    return {
        "apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "app", "namespace": "ns", "uid": "u-app", "resourceVersion": "3", "generation": 1},
        "spec": {"placementRefs": [{"name": "fleet", "rolloutStrategy": strategy}], "manifestWorkTemplate": template},
    }


PLACEMENT: JSON = {"metadata": {"name": "fleet", "namespace": "ns", "generation": 1}, "spec": {}, "status": {
    "numberOfSelectedClusters": len(CLUSTERS),
    "decisionGroups": [
        {"decisionGroupIndex": g, "decisionGroupName": "", "decisions": [f"fleet-decision-{g + 1}"], "clusterCount": 4}
        for g in (0, 1)
    ],
    "conditions": [{"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled", "message": "",
                    "lastTransitionTime": format_time(NOW), "observedGeneration": 1}],
}}
DECISIONS: list[JSON] = [
    {"metadata": {"name": f"fleet-decision-{g + 1}", "namespace": "ns", "resourceVersion": str(g + 1),
                  "labels": {LABEL_PLACEMENT: "fleet", LABEL_DECISION_GROUP_INDEX: str(g)}},
     "status": {"decisions": [{"clusterName": c, "reason": ""} for c in CLUSTERS[4 * g : 4 * g + 4]]}}
    for g in (0, 1)
]

conditions = st.lists(
    st.builds(
        lambda type_, status, observed, age, reason: {
            "type": type_, "status": status, "observedGeneration": observed,
            "lastTransitionTime": format_time(NOW - timedelta(seconds=age)), "reason": reason, "message": reason,
        },
        st.sampled_from(CONDITION_TYPES), st.sampled_from(["True", "False", "Unknown"]), st.integers(1, 2),
        st.integers(0, 600), st.sampled_from(["", "Bench", "Failed"]),
    ),
    max_size=5,
)
# One change to the fleet: (what, cluster index, conditions, template index).
events = st.tuples(
    st.sampled_from(["write", "write", "write", "status", "status", "status", "respec", "mark", "delete",
                     "manifest-failure", "twin", "orphan", "drop-extra"]),
    # Half the events go to the first two clusters, so one work often changes several times.
    st.one_of(st.integers(0, 1), st.integers(0, len(CLUSTERS) - 1)), conditions, st.integers(0, 1),
)


class Fleet:
    """The works as the cache would hold them: each change a new object with a new version."""

    def __init__(self) -> None:
        self.works: dict[str, JSON] = {}
        # Works beside the one of each cluster: duplicates of a (cluster, placement), works of a
        # placementRef the MWRS no longer names (each to be deleted by the plan).
        self.extras: dict[str, JSON] = {}
        self.version = 100
        self.uids = 0

    def listed(self) -> list[JSON]:
        return [*self.works.values(), *self.extras.values()]

    def _next(self) -> str:
        self.version += 1
        return str(self.version)

    def put(self, cluster: str, work: JSON) -> None:
        self.works[cluster] = work

    def apply(self, event: tuple[str, int, list[JSON], int], plans: Plans, memo: WorkMemo) -> None:
        what, index, conds, template = event
        cluster = CLUSTERS[index]
        work = self.works.get(cluster)
        if what == "write":
            for write in plans.plan.refs[0].writes if plans.plan.refs else ():
                if write.cluster == cluster:
                    self.uids += 1
                    body = dict(write.desired)
                    generation = 1 if write.existing is None else int(write.existing["metadata"]["generation"]) + 1
                    uid = f"w{self.uids}" if write.existing is None else write.existing["metadata"]["uid"]
                    body["metadata"] = {**body["metadata"], "uid": uid, "resourceVersion": self._next(),
                                        "generation": generation, "creationTimestamp": format_time(NOW)}
                    body.pop("status", None)
                    self.put(cluster, body)
            return
        if what == "drop-extra":
            if self.extras:
                gone = self.extras.pop(sorted(self.extras)[index % len(self.extras)])
                memo.forget(str(gone["metadata"]["uid"]))
            return
        if work is None:
            return
        metadata = dict(work["metadata"])
        if what in ("twin", "orphan"):
            self.uids += 1
            name = f"{metadata['name']}-{what}-{self.uids}"
            labels = dict(metadata.get("labels") or {})
            if what == "orphan":
                labels[LABEL_PLACEMENT_NAME] = "gone"
            self.extras[name] = {**work, "metadata": {**metadata, "name": name, "uid": f"x{self.uids}",
                                                      "resourceVersion": self._next(), "labels": labels}}
            return
        if what == "delete":
            del self.works[cluster]
            memo.forget(str(metadata["uid"]))
            return
        if what == "mark":
            # The overlay's copy of a work whose deletion was requested: same version, new object.
            self.put(cluster, {**work, "metadata": {**metadata, "deletionTimestamp": format_time(NOW)}})
            return
        metadata["resourceVersion"] = self._next()
        if what == "respec":
            metadata["generation"] = int(metadata["generation"]) + 1
            self.put(cluster, {**work, "metadata": metadata, "spec": TEMPLATES[template]})
        elif what == "manifest-failure":
            failing = [{"resourceMeta": {"ordinal": 0, "kind": "ConfigMap", "name": "app"},
                        "conditions": [{"type": "Applied", "status": "False", "reason": "Failed", "message": "no"}]}]
            self.put(cluster, {**work, "metadata": metadata,
                               "status": {"conditions": conds, "resourceStatus": {"manifests": failing}}})
        else:
            self.put(cluster, {**work, "metadata": metadata, "status": {"conditions": conds}})


def inputs(body: JSON, memo: WorkMemo, forms: Forms, current: JSON | None) -> PlanInputs:
    owner = owner_for("ns", "app")
    template = body["spec"]["manifestWorkTemplate"]
    step = history.resolve_update(mwrs=body, owner_label_value=owner.label_value, revisions=[], collision_count=None)
    matches = forms.spec_matcher(template)
    revert = None if current is None else forms.spec_matcher(current)
    if memo is not DIRECT:
        matches = memo.matcher(form_hash(normal_spec(template)), matches)
        revert = None if current is None or revert is None else memo.matcher(form_hash(normal_spec(current)), revert)
    return PlanInputs(
        body=body, planned_body=body, owner=owner, step=step, current_template=current, matches=matches,
        revert_matches=revert, placements={"fleet": PLACEMENT}, decisions={"fleet": DECISIONS}, record=EMPTY,
        now=NOW, memo=memo,
    )


def outcome(plans: Plans, works: list[JSON], memo: WorkMemo) -> tuple[Any, ...]:
    status = aggregation.build_status(
        old_status=None, plan=plans.plan, outcome=DeployOutcome(), works=works, is_current=plans.is_current,
        now=NOW, namespace="ns", memo=memo, owner=("ns/app", "u-app"),
    )
    # The order of each ref's clusters too: messages and events list them as the plan gives them.
    orders = [(list(r.current), list(r.statuses)) for p in (plans.plan_u, plans.plan) for r in p.refs]
    return plans.plan_u, plans.decision, plans.plan, plans.held, status.status, status.apply_failures, orders


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategy=st.sampled_from(STRATEGIES), steps=st.lists(events, min_size=5, max_size=30), respec_at=st.integers(0, 30))
def test_plans_and_status_with_the_memo_equal_those_derived_afresh(
    strategy: JSON, steps: list[tuple[str, int, list[JSON], int]], respec_at: int
) -> None:
    fleet, memo, forms, direct_forms = Fleet(), WorkMemo(), Forms(), Forms()
    body, current = mwrs(TEMPLATES[0], strategy), None
    for number, event in enumerate(steps):
        if number == respec_at:
            # A new template: the works of the old one no longer match, then revert matching applies.
            body, current = mwrs(TEMPLATES[1], strategy), TEMPLATES[0]
        works = fleet.listed()
        kept = plan_and_decide(inputs(body, memo, forms, current), works)
        fresh = plan_and_decide(inputs(body, DIRECT, direct_forms, current), works)
        assert outcome(kept, works, memo) == outcome(fresh, works, DIRECT)
        fleet.apply(event, fresh, memo)
    works = fleet.listed()
    kept = plan_and_decide(inputs(body, memo, forms, current), works)
    fresh = plan_and_decide(inputs(body, DIRECT, direct_forms, current), works)
    assert outcome(kept, works, memo) == outcome(fresh, works, DIRECT)


def test_a_new_version_is_derived_again_and_a_copy_of_the_same_version_is_not() -> None:
    memo = WorkMemo()
    work: JSON = {"metadata": {"uid": "u1", "resourceVersion": "1", "namespace": "c1", "generation": 1},
                  "status": {"conditions": [{"type": "Applied", "status": "True", "observedGeneration": 1}]}}
    assert memo.condition_counts(work) == (1, 0, 0, 0)
    newer = {**work, "metadata": {**work["metadata"], "resourceVersion": "2"},
             "status": {"conditions": [{"type": "Available", "status": "True", "observedGeneration": 1}]}}
    assert memo.condition_counts(newer) == (0, 0, 1, 0)
    marked = {**newer, "metadata": {**newer["metadata"], "deletionTimestamp": "2024-05-01T12:00:00Z"}}
    assert memo.condition_counts(marked) == (0, 0, 1, 0)
    assert len(memo.entries) == 1 and len(memo.by_object) == 1
    memo.forget("u1")
    assert not memo.entries and not memo.by_object


def test_works_without_a_uid_or_version_are_never_kept() -> None:
    memo = WorkMemo()
    work: JSON = {"metadata": {"namespace": "c1"}, "status": {"conditions": [{"type": "Degraded", "status": "True"}]}}
    assert memo.condition_counts(work) == condition_counts(work) == (0, 0, 0, 1)
    assert not memo.entries and not memo.by_object


def test_the_matcher_judges_once_per_version_and_template() -> None:
    memo, calls = WorkMemo(), []
    work: JSON = {"metadata": {"uid": "u1", "resourceVersion": "1"}}

    def predicate(w: JSON) -> bool:
        calls.append(w)
        return True

    matches = memo.matcher("t1", predicate)
    assert matches(work) and matches(work)
    assert len(calls) == 1
    assert memo.matcher("t2", predicate)(work)
    assert len(calls) == 2
    assert matches({**work, "metadata": {"uid": "u1", "resourceVersion": "2"}})
    assert len(calls) == 3


def test_a_ref_table_judges_only_the_clusters_whose_work_changed() -> None:
    memo, judged = WorkMemo(), []
    matches = memo.matcher("t1", lambda work: work["spec"] == "t1")

    def status_of(work: JSON) -> Any:
        judged.append(work["metadata"]["name"])
        return memo.rollout_status(work)

    def work(name: str, version: str, spec: str = "t1") -> JSON:
        return {"metadata": {"name": name, "namespace": name, "uid": f"u-{name}", "resourceVersion": version},
                "spec": spec}

    table = memo.ref_table("ns/app", ("u-app", "fleet"), matches, False)
    works = {"b": work("b", "1"), "a": work("a", "1"), "c": work("c", "1", spec="old")}
    table.update(works, matches, status_of)
    assert sorted(judged) == ["a", "b"] and list(table.statuses) == ["a", "b"] and table.outdated == {"c"}
    judged.clear()
    works = {**works, "a": work("a", "2"), "d": work("d", "1")}
    del works["b"]
    assert memo.ref_table("ns/app", ("u-app", "fleet"), matches, False) is table
    table.update(works, matches, status_of)
    assert judged == ["a", "d"]
    assert list(table.current) == ["a", "d"] and [e.cluster_name for e in table.existing()] == ["a", "d"]
    # Another template, a verifying strategy, or a matcher the memo did not make: another table.
    assert memo.ref_table("ns/app", ("u-app", "fleet"), memo.matcher("t2", matches), False) is not table
    assert memo.ref_table("ns/app", ("u-app", "fleet"), matches, True) is not table
    assert memo.ref_table("ns/app", ("u-app", "fleet"), lambda w: True, False) is not table
    assert DIRECT.ref_table("ns/app", ("u-app", "fleet"), matches, False) is not DIRECT.ref_table(
        "ns/app", ("u-app", "fleet"), matches, False
    )
    memo.forget_owner("ns/app")
    assert memo.ref_table("ns/app", ("u-app", "fleet"), matches, False) is not table
