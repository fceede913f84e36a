# Two entry points for people: `make up` and `make test`. Everything else is plumbing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
WORKERS ?= $(shell nproc 2>/dev/null || echo 1)

.PHONY: up test lint venv lock clean screenshots kube-hub helm ocm-binaries go-binaries

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

## Start the embedded local hub with simulated managed clusters and every controller.
up: $(STAMP)
	$(BIN)/ocm-rollout up $(ARGS)

## Run the whole test suite on pytest-xdist workers, one per core (WORKERS=N for another count). A
## module's tests on one hub kind stay on one worker, so its `up` or hub fixture starts once
## (tests/conftest.py: one work unit per module and kind). First the Go programs it runs (kube-apiserver,
## etcd, kube-controller-manager, helm, OCM's commands) are built when Go is there, or found cached.
test: $(STAMP)
	@if command -v go >/dev/null; then $(PYTHON) -P sandbox/gobuild.py kube-hub helm ocm; \
	else echo "make test: no Go toolchain: the runs on kube-apiserver, the chart and tests/compat skip (install Go 1.24+)"; fi
	$(BIN)/python -m pytest -q -n $(WORKERS) --dist loadscope --no-loadscope-reorder $(PYTEST_ARGS)

## The dashboard's screenshots (docs/images/dashboard-*.png), taken by the browser tests that show
## the list, a rollout and a placement (they need Chromium at /usr/bin/chromium).
SCREENSHOT_TESTS := \
	tests/browser/test_dashboard_tour.py::test_the_list_shows_the_tours_manifestworkreplicaset \
	tests/browser/test_dashboard_tour.py::test_the_placement_page_shows_the_placements_decision_groups \
	tests/browser/test_dashboard_rollouts.py::test_a_progressive_rollouts_chips_change_without_a_reload \
	tests/browser/test_dashboard_abort.py::test_a_bad_update_aborts_by_itself_and_the_page_names_the_failed_clusters

screenshots: $(STAMP)
	OCM_ROLLOUT_SCREENSHOTS=docs/images $(BIN)/python -m pytest -q -n 2 --dist loadscope -p no:cacheprovider \
		-rs --hubs local $(SCREENSHOT_TESTS) $(PYTEST_ARGS)
	@ls -l docs/images/dashboard-*.png

## The Go programs the real-Kubernetes tests and `up --hub kube-apiserver` run, built from their Go
## modules through the module proxy at pinned versions (sandbox/gobuild.py) and cached in
## ~/.cache/ocm-rollout/bin: kube-apiserver, kube-controller-manager and etcd; helm; OCM's own
## placement, work and addon commands (tests/compat). A second run takes a second.
kube-hub:
	$(PYTHON) -P sandbox/gobuild.py kube-hub

helm:
	$(PYTHON) -P sandbox/gobuild.py helm

ocm-binaries:
	$(PYTHON) -P sandbox/gobuild.py ocm

go-binaries:
	$(PYTHON) -P sandbox/gobuild.py kube-hub helm ocm

lint: $(STAMP)
	$(BIN)/ruff check api client controllers sandbox cli tests bench
	$(BIN)/mypy -p ocm_rollout

## Refresh the constraints file from a fresh resolution (reviewed and committed by hand).
lock:
	rm -rf .lockenv && $(PYTHON) -m venv .lockenv
	.lockenv/bin/python -m pip install --quiet --upgrade pip
	.lockenv/bin/python -m pip install --quiet '.[dev]'
	.lockenv/bin/python -m pip freeze --exclude-editable | grep -v '^ocm-rollout' > constraints.txt
	rm -rf .lockenv

clean:
	rm -rf $(VENV) .ocm-rollout .pytest_cache .mypy_cache .ruff_cache
