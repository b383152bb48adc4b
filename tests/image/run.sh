#!/usr/bin/env bash
# CI's image check (docs/testing.md): builds the image from BUILD_DIR's
# programs (scripts/build-image --binaries: CI's test build is already
# there, so the image is not compiled a second time), then runs the smoke
# test against it with BUILD_DIR's fake llama-server.
#
#   tests/image/run.sh BUILD_DIR [OUT_DIR]      (default build-image/)
#
# The last line is `image: N passed, M failed`, or `image: SKIPPED: why`
# where podman is missing or cannot run a container. A skip exits 77, and 1
# under CI=true: CI's machine runs podman (scripts/install-deps.sh --image),
# so a skip there means something broke, and must not pass.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
out=${2:-$repo/build-image}
mkdir -p "$out"
out=$(cd "$out" && pwd)

skip() {
  echo "image: SKIPPED: $*"
  if [[ "${CI:-}" == true ]]; then
    echo "(CI=true: a skipped image check fails the run)"
    exit 1
  fi
  exit 77
}
command -v podman >/dev/null 2>&1 || skip "podman is not installed (scripts/install-deps.sh --image)"
[[ -x "$build/fakes/bin/llama-server" ]] || skip "no fake llama-server in $build/fakes/bin (a build with tests)"

t0=$(date +%s)
"$repo/scripts/build-image" --binaries "$build" --out "$out" | tee "$out/build-image.out"
rc=${PIPESTATUS[0]}
if ((rc == 77)); then
  skip "$(grep '^build-image:' "$out/build-image.out" | tail -1 | sed 's/^build-image: //')"
elif ((rc != 0)); then
  echo "image: 0 passed, 1 failed (scripts/build-image exited $rc)"
  exit 1
fi
echo "built in $(($(date +%s) - t0)) s: $(sed -n 's/^size_compressed_bytes: //p' "$out/image.txt") bytes compressed, $(sed -n 's/^manifest_digest: //p' "$out/image.txt")"
tag=$(sed -n 's/^tag: //p' "$out/image.txt")
# Its last line, `image: N passed, M failed`, is this script's.
exec "$repo/tests/image/smoke_test.sh" "$tag" "$build/fakes/bin" "$out/smoke"
