#!/usr/bin/env bash
# Installs what lemonade-router needs on Debian 12, from Debian's packages.
#   scripts/install-deps.sh          build and run the daemon
#   scripts/install-deps.sh --test   also build and run the test suite
#   scripts/install-deps.sh --image  build and run the container image
#                                    (scripts/build-image, tests/image)
#   scripts/install-deps.sh --kubernetes  render and validate deploy/kubernetes
#                                    (tests/kubernetes)
# The options combine; the first run with none installs the build's packages.
set -euo pipefail

# `file` and build-essential's dpkg-dev let `cpack -G DEB` compute the .deb's
# dependencies (docs/install.md).
packages=(build-essential cmake pkg-config nlohmann-json3-dev libcli11-dev libspdlog-dev
          libcurl4-openssl-dev libssl-dev libarchive-dev file)
test=0 image=0 kubernetes=0
for arg in "$@"; do
  case "$arg" in
    --test) test=1 ;;
    --image) image=1 ;;
    --kubernetes) kubernetes=1 ;;
    *) echo "usage: $0 [--test] [--image] [--kubernetes]" >&2; exit 2 ;;
  esac
done
if ((test)); then
  packages+=(libgtest-dev libgmock-dev libcpp-httplib-dev)
  # Sanitizer builds and libFuzzer (scripts/run-sanitizers, scripts/run-fuzzers):
  # clang, its runtimes, and llvm-symbolizer for readable reports.
  packages+=(clang libclang-rt-14-dev llvm-14)
  # scripts/lint: the formatter and clang-tidy of the same release.
  packages+=(clang-format-14 clang-tidy-14)
  # The SDK end-to-end tests need Node.js and npm; keep a newer Node if present.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
  # The dashboard's browser test (tests/browser) drives headless Chromium.
  packages+=(chromium)
  # The WebSocket client test (tests/sdk/websocket_client.py) uses Python's
  # websockets, with Debian's python3.
  packages+=(python3 python3-websockets)
fi
if ((image)); then
  # podman builds and runs the image; mmdebstrap makes its Debian 12 base
  # where no registry can be reached. runc beside crun: crun refuses a host
  # whose cgroup v2 hierarchy holds controllers while v1 is mounted too
  # ("cgroups in hybrid mode not supported"), and runc runs there
  # (scripts/podman-env). uidmap, slirp4netns and fuse-overlayfs are what
  # podman needs to run without root.
  packages+=(podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs)
fi
if ((kubernetes)); then
  # `kubectl kustomize` renders the overlays offline. Keep a kubectl that is
  # already there (another package's may conflict with Debian's
  # kubernetes-client); install Debian's only where there is none.
  command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
  # The schema check (tests/kubernetes) runs on Node.js with npm packages.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ "$(id -u)" != 0 ]]; then
  sudo=(sudo)
fi
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
