"""``make test``'s pytest-xdist work units (tests/conftest.py): one per module and hub kind."""

from __future__ import annotations

from tests.conftest import xdist_scope


def test_a_module_without_hub_kinds_is_one_unit() -> None:
    assert xdist_scope("tests/unit/test_a.py::test_x") == "tests/unit/test_a.py"
    assert xdist_scope("tests/unit/test_a.py::test_y[case-1]") == "tests/unit/test_a.py"


def test_each_hub_kind_of_a_module_is_its_own_unit() -> None:
    assert xdist_scope("tests/e2e/test_b.py::test_x[local]") == "tests/e2e/test_b.py::local"
    assert xdist_scope("tests/e2e/test_b.py::test_y[kube-apiserver]") == "tests/e2e/test_b.py::kube-apiserver"
    # with other parameters, before or after the kind
    assert xdist_scope("tests/integration/test_c.py::test_z[kube-apiserver-0]") == "tests/integration/test_c.py::kube-apiserver"
    assert xdist_scope("tests/integration/test_c.py::test_z[3-local]") == "tests/integration/test_c.py::local"
    assert xdist_scope("tests/integration/test_c.py::test_z[a-local-b]") == "tests/integration/test_c.py::local"
