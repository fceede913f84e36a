"""Sequences that read: list paging, label and field selectors, resourceVersion semantics,
deletecollection, and watches (from a resourceVersion, bookmarks, initial events, a too-old
resourceVersion, the order of a burst of writes).

Every object a sequence creates here carries the label ``seq=<sequence name>`` and every list or
watch selects it, so a cluster-scoped list sees the sequence's own objects only (not those other
sequences left), and a namespace's list not what kube-controller-manager adds to every namespace
(its ``kube-root-ca.crt`` ConfigMap and ``default`` ServiceAccount)."""

from __future__ import annotations

from typing import Any

from tests.differential.engine import Answers, Sequence, Step
from tests.differential.kinds import CRDS, Kind, by_plural
from tests.differential.seq_objects import _id

JSON = Any


OWN = "seq={ns}"


def own(selector: str = "") -> str:
    """A label selector of the sequence's own objects (and ``selector``)."""
    return OWN + ("," + selector if selector else "")


def _objects(kind: Kind, count: int) -> list[Step]:
    labels = [{"seq": "{ns}", "n": str(i), "parity": "even" if i % 2 == 0 else "odd"} for i in range(count)]
    return [Step("POST", kind.collection(), kind.body(kind.name(f"o{i}"), labels=labels[i]), compare=False)
            for i in range(count)]


def paging(kind: Kind) -> Sequence:
    steps = _objects(kind, 5)
    first = len(steps)
    steps += [
        Step("GET", kind.collection(), query={"limit": "2", "labelSelector": own()}),
        Step("GET", kind.collection(), query=lambda a: {"limit": "2", "labelSelector": own(),
                                                        "continue": a[first].body["metadata"]["continue"]}),
        Step("GET", kind.collection(), query=lambda a: {"limit": "2", "labelSelector": own(),
                                                        "continue": a[first + 1].body["metadata"]["continue"]}),
        Step("GET", kind.collection(), query={"limit": "2", "continue": "not-a-token", "labelSelector": own()}),
        Step("GET", kind.collection(), query={"limit": "-1", "labelSelector": own()}),
        Step("GET", kind.collection(), query={"limit": "0", "labelSelector": own()}),
    ]
    return Sequence(f"paging-{_id(kind.label)}", "list", steps)


def selectors(kind: Kind) -> Sequence:
    steps = _objects(kind, 4)
    steps += [
        Step("GET", kind.collection(), query={"labelSelector": own("parity=even")}),
        Step("GET", kind.collection(), query={"labelSelector": own("n in (1,3),parity!=even")}),
        Step("GET", kind.collection(), query={"labelSelector": own("!missing")}),
        Step("GET", kind.collection(), query={"labelSelector": own("n notin (0)")}),
        Step("GET", kind.collection(), query={"labelSelector": "bad selector =="}),
        Step("GET", kind.collection(), query={"fieldSelector": f"metadata.name={kind.name('o1')}"}),
        Step("GET", kind.collection(), query={"fieldSelector": f"metadata.name!={kind.name('o1')}", "labelSelector": own()}),
        Step("GET", kind.collection(), query={"fieldSelector": "spec.unsupported=x"}),
        Step("GET", kind.collection(), query={"fieldSelector": "metadata.namespace={ns}", "labelSelector": own()}),
        Step("GET", kind.collection(), query={"fieldSelector": "metadata.name"}),
    ]
    return Sequence(f"selectors-{_id(kind.label)}", "list", steps)


def resource_versions(kind: Kind) -> Sequence:
    steps = _objects(kind, 2)
    steps += [
        Step("GET", kind.collection(), query={"resourceVersion": "0", "labelSelector": own()}),
        Step("GET", kind.collection(), query=lambda a: {"resourceVersion": a[0].rv(), "resourceVersionMatch": "NotOlderThan",
                                                        "labelSelector": own()}),
        Step("GET", kind.collection(), query={"resourceVersionMatch": "Exact"}),
        Step("GET", kind.collection(), query={"resourceVersion": "abc"}),
        Step("GET", kind.collection(), query={"resourceVersion": "0", "resourceVersionMatch": "Bogus"}),
        Step("GET", kind.collection(), query={"resourceVersion": "999999999", "resourceVersionMatch": "NotOlderThan",
                                              "timeoutSeconds": "1"}),
        Step("GET", kind.path(kind.name("o0")), query={"resourceVersion": "0"}),
    ]
    return Sequence(f"resourceversions-{_id(kind.label)}", "list", steps)


def delete_collection(kind: Kind) -> Sequence:
    steps = _objects(kind, 4)
    steps += [
        Step("DELETE", kind.collection(), query={"labelSelector": own("parity=even")}),
        Step("GET", kind.collection(), query={"labelSelector": own()},
             until=lambda r: len((r.body or {}).get("items") or []) == 2),
        Step("DELETE", kind.collection(), query={"labelSelector": own()}),
        Step("GET", kind.collection(), query={"labelSelector": own()}, until=lambda r: (r.body or {}).get("items") == []),
    ]
    return Sequence(f"deletecollection-{_id(kind.label)}", "list", steps)


def watch_from(kind: Kind) -> Sequence:
    name = kind.name("w")
    return Sequence(f"watch-from-rv-{_id(kind.label)}", "watch", [
        Step("POST", kind.collection(), kind.body(name, labels={"seq": "{ns}"})),
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"a": "1"}}}, content_type="application/merge-patch+json"),
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"a": "2"}}}, content_type="application/merge-patch+json"),
        Step("DELETE", kind.path(name)),
        Step("WATCH", kind.collection(), query=lambda a: {"resourceVersion": a[0].rv(), "labelSelector": own()}, events=3),
        Step("WATCH", kind.collection(), query=lambda a: {"resourceVersion": a[0].rv(), "fieldSelector": f"metadata.name={name}"},
             events=3),
        Step("WATCH", kind.collection(), query=lambda a: {"resourceVersion": a[0].rv(), "labelSelector": own("a=2")}, events=2),
    ])


def watch_initial(kind: Kind) -> Sequence:
    steps = _objects(kind, 3)
    steps += [
        Step("WATCH", kind.collection(), query={"resourceVersion": "0", "labelSelector": own()}, events=3),
        Step("WATCH", kind.collection(), query={"sendInitialEvents": "true", "allowWatchBookmarks": "true", "labelSelector": own(),
                                                "resourceVersionMatch": "NotOlderThan"}, events=4),
        Step("WATCH", kind.collection(), query={"sendInitialEvents": "true", "labelSelector": own()}, events=1),
        Step("WATCH", kind.collection(), query={"resourceVersion": "1", "labelSelector": own()}, events=1),
        Step("GET", kind.collection(), query={"watch": "true", "resourceVersion": "abc"}),
    ]
    return Sequence(f"watch-initial-{_id(kind.label)}", "watch", steps)


def watch_burst(kind: Kind) -> Sequence:
    steps = [Step("GET", kind.collection(), compare=False)]
    for i in range(6):
        steps.append(Step("POST", kind.collection(), kind.body(kind.name(f"b{i}"), labels={"seq": "{ns}"}), compare=False))
    for i in range(0, 6, 2):
        steps.append(Step("DELETE", kind.path(kind.name(f"b{i}")), compare=False))

    def simplified(answers: Answers) -> dict[str, str]:
        return {"resourceVersion": answers[0].rv(), "labelSelector": own()}

    steps.append(Step("WATCH", kind.collection(), query=simplified, events=9))
    return Sequence(f"watch-burst-{_id(kind.label)}", "watch", steps)


def watch_timeout(kind: Kind) -> Sequence:
    return Sequence(f"watch-timeout-{_id(kind.label)}", "watch", [
        Step("GET", kind.collection(), compare=False),
        Step("WATCH", kind.collection(), query=lambda a: {"resourceVersion": a[0].rv(), "timeoutSeconds": "1",
                                                          "labelSelector": own()}, events=5),
    ])


def sequences() -> list[Sequence]:
    secrets = by_plural("secrets")
    list_kinds = [secrets, by_plural("placements"), by_plural("managedclusters"), by_plural("manifestworks"),
                  by_plural("clustermanagementaddons", "v1beta1"), by_plural("managedclusteraddons", "v1alpha1")]
    out: list[Sequence] = []
    out += [paging(k) for k in list_kinds]
    out += [selectors(k) for k in list_kinds]
    out += [resource_versions(k) for k in list_kinds[:3]]
    out += [delete_collection(k) for k in list_kinds if k.namespaced]
    out += [watch_from(k) for k in list_kinds]
    out += [watch_initial(k) for k in list_kinds[:3]]
    out += [watch_burst(k) for k in list_kinds[:3]]
    out += [watch_timeout(k) for k in list_kinds[:2]]
    assert all(k in CRDS or k is secrets for k in list_kinds)
    return out
