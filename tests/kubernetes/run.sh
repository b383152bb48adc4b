#!/usr/bin/env bash
# Renders deploy/kubernetes without a cluster and validates what it renders
# (docs/kubernetes.md, docs/testing.md).
#
#   tests/kubernetes/run.sh [WORK_DIR]      (default build-kubernetes/)
#
# Every target (the base, each overlay, the ServiceMonitor) is rendered with
# `kubectl kustomize` by each kubectl at hand: the one on PATH, and Debian
# 12's kubernetes-client (kubectl 1.20, kustomize 2.0), unpacked into
# WORK_DIR from its package without installing it (it conflicts with other
# kubectl packages), where the one on PATH is another. Both must give the
# same objects, so the overlays keep to what kustomize 2.0 reads. The npm
# packages pinned by package-lock.json then validate them (validate.mjs).
# The last line is `kubernetes: N passed, M failed`, or
# `kubernetes: SKIPPED: why` where kubectl or Node.js is missing: exit 77, and
# 1 under CI=true, whose machine has them (scripts/install-deps.sh
# --kubernetes), so that a skip there never passes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$repo/build-kubernetes}
mkdir -p "$work"
work=$(cd "$work" && pwd)

skip() {
  echo "kubernetes: SKIPPED: $*"
  [[ "${CI:-}" == true ]] && { echo "(CI=true: a skipped check fails the run)"; exit 1; }
  exit 77
}
command -v kubectl >/dev/null 2>&1 || skip "no kubectl (scripts/install-deps.sh --kubernetes)"
command -v node >/dev/null 2>&1 || skip "no node (scripts/install-deps.sh --kubernetes)"
command -v npm >/dev/null 2>&1 || skip "no npm (scripts/install-deps.sh --kubernetes)"

# The validator and its pinned packages.
cp "$repo/tests/kubernetes/package.json" "$repo/tests/kubernetes/package-lock.json" \
   "$repo/tests/kubernetes/validate.mjs" "$work/"
(cd "$work" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
  { cat "$work/npm.log"; echo "kubernetes: 0 passed, 1 failed (npm ci)"; exit 1; }

# The kubectls.
declare -A kubectls=([path]=$(command -v kubectl))
if ! dpkg-query -W -f='${Status}' kubernetes-client 2>/dev/null | grep -q "install ok installed"; then
  debian="$work/kubernetes-client"
  if [[ ! -x "$debian/usr/bin/kubectl" ]]; then
    rm -rf "$debian" "$work"/kubernetes-client_*.deb
    if (cd "$work" && apt-get download kubernetes-client >apt.log 2>&1); then
      dpkg-deb -x "$work"/kubernetes-client_*.deb "$debian"
    else
      echo "note: Debian's kubernetes-client could not be downloaded ($(tail -1 "$work/apt.log")); rendering with $(command -v kubectl) only"
    fi
  fi
  [[ -x "$debian/usr/bin/kubectl" ]] && kubectls[debian-kubernetes-client]="$debian/usr/bin/kubectl"
fi

rm -rf "$work/rendered"
render_failed=0
for name in "${!kubectls[@]}"; do
  kubectl_bin=${kubectls[$name]}
  echo "$name: $("$kubectl_bin" version --client 2>/dev/null | head -1)"
  mkdir -p "$work/rendered/$name"
  for dir in "$repo"/deploy/kubernetes/base "$repo"/deploy/kubernetes/overlays/* \
             "$repo"/deploy/kubernetes/servicemonitor; do
    target=$(basename "$dir")
    # Newer kubectls warn on stderr that kustomize 2.0's `bases` and
    # `patchesStrategicMerge` are deprecated; the objects are the same.
    if ! "$kubectl_bin" kustomize "$dir" >"$work/rendered/$name/$target.yaml" 2>"$work/render.err"; then
      echo "not ok - $name cannot render $target:"
      sed 's/^/    /' "$work/render.err"
      render_failed=1
    fi
  done
done
if ((render_failed)); then
  echo "kubernetes: 0 passed, 1 failed (rendering)"
  exit 1
fi
node "$work/validate.mjs" "$work/rendered"
