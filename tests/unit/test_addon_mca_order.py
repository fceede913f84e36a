"""The add-on manager's MCAs by add-on (controllers/addon/indexes.py): ``sorted_mcas`` keeps its
order between calls and is always the add-on's MCAs in cluster order, whatever the events."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ocm_rollout.controllers.addon.indexes import AddonIndexes

_events = st.lists(
    st.tuples(
        st.sampled_from(["c1", "c2", "c3", "c10"]),  # cluster (MCA namespace)
        st.sampled_from(["a", "b"]),  # add-on name
        st.sampled_from(["ADDED", "MODIFIED", "DELETED", ""]),
    ),
    max_size=40,
)


def _mca(cluster: str, name: str, version: int) -> dict:
    return {"metadata": {"namespace": cluster, "name": name, "resourceVersion": str(version)}, "spec": {}}


@settings(max_examples=300, deadline=None)
@given(_events)
def test_sorted_mcas_is_the_addons_mcas_in_cluster_order(events: list[tuple[str, str, str]]) -> None:
    ix = AddonIndexes()
    model: dict[tuple[str, str], dict] = {}
    for version, (cluster, name, event_type) in enumerate(events, start=1):
        mca = _mca(cluster, name, version)
        ix.on_mca(event_type, mca, None)
        if event_type == "DELETED":
            model.pop((cluster, name), None)
        else:
            model[(cluster, name)] = mca
        for addon in ("a", "b"):
            expected = sorted((c, m) for (c, n), m in model.items() if n == addon)
            assert ix.sorted_mcas(addon) == expected
            assert ix.sorted_mcas(addon) == expected  # again, from the kept order


def test_a_new_version_keeps_the_order_a_new_cluster_renews_it() -> None:
    ix = AddonIndexes()
    ix.on_mca("ADDED", _mca("c2", "a", 1), None)
    ix.on_mca("ADDED", _mca("c1", "a", 2), None)
    assert [c for c, _ in ix.sorted_mcas("a")] == ["c1", "c2"]
    kept = ix.mca_order.kept("a")
    assert kept is not None
    newer = _mca("c2", "a", 3)
    ix.on_mca("MODIFIED", newer, None)
    assert ix.mca_order.kept("a") is kept
    assert ix.sorted_mcas("a")[1][1] is newer
    ix.on_mca("DELETED", _mca("c1", "a", 4), None)
    assert ix.mca_order.kept("a") is None
    assert [c for c, _ in ix.sorted_mcas("a")] == ["c2"]
