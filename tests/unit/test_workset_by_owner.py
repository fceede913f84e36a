"""The owner-label index of the ManifestWorkReplicaSet controller (controllers/workset/indexes.py):
``sorted_items`` keeps its order between calls and is always ``items`` in (namespace, name) order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ocm_rollout.controllers.workset.indexes import ByOwner

Key = tuple[str, str]

_events = st.lists(
    st.tuples(
        st.sampled_from(["ns1", "ns2", "ns3"]),  # namespace
        st.sampled_from(["w1", "w2", "w3", "w4"]),  # name
        st.sampled_from(["a", "b", None]),  # owner label value
        st.booleans(),  # deleted
    ),
    max_size=40,
)


def _work(key: Key, version: int, uid: str) -> dict:
    return {"metadata": {"namespace": key[0], "name": key[1], "uid": uid, "resourceVersion": str(version)}}


@settings(max_examples=300, deadline=None)
@given(_events)
def test_sorted_items_is_items_in_key_order_after_any_events(events: list[tuple[str, str, str | None, bool]]) -> None:
    index = ByOwner()
    model: dict[Key, tuple[str, dict]] = {}
    for version, (namespace, name, value, deleted) in enumerate(events, start=1):
        key = (namespace, name)
        work = _work(key, version, f"uid-{namespace}-{name}")
        index.update(key, value, work, deleted=deleted)
        if deleted or value is None:
            model.pop(key, None)
        else:
            model[key] = (value, work)
        for owner in ("a", "b"):
            expected = sorted((k, w) for k, (v, w) in model.items() if v == owner)
            assert index.sorted_items(owner) == expected
            assert sorted(index.items(owner)) == expected
            # Asked again with nothing changed: the same answer (from the kept order).
            assert index.sorted_items(owner) == expected


def test_a_new_version_keeps_the_order_and_a_new_key_renews_it() -> None:
    index = ByOwner()
    for name in ("w3", "w1"):
        index.update(("ns", name), "a", _work(("ns", name), 1, name), deleted=False)
    assert [k for k, _ in index.sorted_items("a")] == [("ns", "w1"), ("ns", "w3")]
    kept = index.order.kept("a")
    assert kept is not None
    newer = _work(("ns", "w3"), 2, "w3")
    index.update(("ns", "w3"), "a", newer, deleted=False)
    assert index.order.kept("a") is kept  # no key came or went
    assert index.sorted_items("a")[1][1] is newer
    index.update(("ns", "w2"), "a", _work(("ns", "w2"), 3, "w2"), deleted=False)
    assert index.order.kept("a") is None
    assert [k for k, _ in index.sorted_items("a")] == [("ns", "w1"), ("ns", "w2"), ("ns", "w3")]
    # Moving a work to another owner renews both orders.
    index.update(("ns", "w1"), "b", _work(("ns", "w1"), 4, "w1"), deleted=False)
    assert [k for k, _ in index.sorted_items("a")] == [("ns", "w2"), ("ns", "w3")]
    assert [k for k, _ in index.sorted_items("b")] == [("ns", "w1")]
