#!/usr/bin/env bash
# Installs what lemonade-router needs on Debian 12, from Debian's packages.
#   scripts/install-deps.sh          build and run the daemon
#   scripts/install-deps.sh --test   also build and run the test suite
set -euo pipefail

# `file` and build-essential's dpkg-dev let `cpack -G DEB` compute the .deb's
# dependencies (docs/install.md).
packages=(build-essential cmake pkg-config nlohmann-json3-dev libcli11-dev libspdlog-dev
          libcurl4-openssl-dev libssl-dev libarchive-dev file)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(libgtest-dev libgmock-dev libcpp-httplib-dev)
  # Sanitizer builds and libFuzzer (scripts/run-sanitizers, scripts/run-fuzzers):
  # clang, its runtimes, and llvm-symbolizer for readable reports.
  packages+=(clang libclang-rt-14-dev llvm-14)
  # The SDK end-to-end tests need Node.js and npm; keep a newer Node if present.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
  # The dashboard's browser test (tests/browser) drives headless Chromium.
  packages+=(chromium)
  # The WebSocket client test (tests/sdk/websocket_client.py) uses Python's
  # websockets, with Debian's python3.
  packages+=(python3 python3-websockets)
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
