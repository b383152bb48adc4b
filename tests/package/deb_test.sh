#!/usr/bin/env bash
# The .deb (issue #9 §3): cpack builds it; it holds the programs (and
# Lemonade 11's lemond and lemonade; the unit is also lemond.service), the
# resources and the systemd unit, with Debian dependencies; the programs
# unpacked from it run (the router finds its resources under share/); and,
# as root, `dpkg -i` installs it, the installed router answers the installed
# CLI (status probes /live; list shows the catalogue from share/), and
# `dpkg --purge` removes it again. `cmake --install` to a temporary prefix
# gives the same layout, with the unit naming that prefix.
#   deb_test.sh BUILD_DIR
set -euo pipefail
if ! command -v dpkg-deb >/dev/null; then
  echo "dpkg-deb not found: not a Debian system, skipped"
  exit 77
fi
build=$(cd "$1" && pwd)
work=$(mktemp -d)
router_pid=
cleanup() {
  if [[ -n "$router_pid" ]]; then kill "$router_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/pkg/*.deb)
echo "built $(basename "$deb")"

dpkg-deb -c "$deb" >"$work/contents"
for f in ./usr/bin/lemonade-router ./usr/bin/lemonade-server ./usr/bin/lemond ./usr/bin/lemonade \
         ./usr/share/lemonade-router/resources/server_models.json \
         ./usr/share/lemonade-router/resources/presets.json \
         ./usr/share/lemonade-router/resources/backend_versions.json \
         ./usr/lib/systemd/system/lemonade-router.service; do
  grep -q " $f\$" "$work/contents" || fail "$f is not in the package"
done
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libcurl4 libssl3 libarchive13 passwd; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
dpkg-deb -I "$deb" postinst >/dev/null || fail "no postinst"

# Starts ROUTER on a free loopback port with a private home and no network
# (it writes its port to a FIFO once it listens: no polling), then checks it
# through CLI: /live, and a non-empty catalogue (resources were found);
# then Lemonade 11's client beside CLI finds it too, and lemond beside it
# answers --version.
check_router() {
  local router=$1 cli=$2 home=$work/home-$RANDOM
  local bin
  bin=$(dirname "$cli")
  mkdir -p "$home"
  rm -f "$work/ready"
  mkfifo "$work/ready"
  HOME=$home HF_ENDPOINT=http://127.0.0.1:9 LEMONADE_RELEASES_URL=http://127.0.0.1:9 \
    "$router" --host 127.0.0.1 --port 0 --ready-fd 3 3>"$work/ready" 2>"$work/router.log" &
  router_pid=$!
  local port
  read -r -t 60 port <"$work/ready" || { cat "$work/router.log"; fail "$router did not start"; }
  LEMONADE_PORT=$port LEMONADE_RUNTIME_DIR=$home "$cli" status | grep -q "running on port $port" ||
    fail "$cli status did not find the router on port $port"
  LEMONADE_PORT=$port LEMONADE_RUNTIME_DIR=$home "$cli" list --json | grep -q '"Qwen3-0.6B-GGUF"' ||
    fail "the router from $router did not find its catalogue"
  LEMONADE_PORT=$port "$bin/lemonade" status | grep -q "running on port $port" ||
    fail "$bin/lemonade status did not find the router on port $port"
  "$bin/lemond" --version | grep -q "^lemond version" || fail "$bin/lemond --version"
  kill -TERM "$router_pid"
  wait "$router_pid" || fail "$router did not stop cleanly"
  router_pid=
}

dpkg-deb -x "$deb" "$work/root"
grep -qx "ExecStart=/usr/bin/lemonade-router" "$work/root/usr/lib/systemd/system/lemonade-router.service" ||
  fail "the packaged unit does not start /usr/bin/lemonade-router"
grep -qx "Alias=lemond.service" "$work/root/usr/lib/systemd/system/lemonade-router.service" ||
  fail "the packaged unit has no Alias=lemond.service"
check_router "$work/root/usr/bin/lemonade-router" "$work/root/usr/bin/lemonade-server"
echo "unpacked programs: ok"

# `cmake --install` to another prefix: the same layout, and the unit names
# that prefix's router.
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install"; }
grep -qx "ExecStart=$work/prefix/bin/lemonade-router" "$work/prefix/lib/systemd/system/lemonade-router.service" ||
  fail "the installed unit does not start $work/prefix/bin/lemonade-router"
check_router "$work/prefix/bin/lemonade-router" "$work/prefix/bin/lemonade-server"
echo "cmake --install: ok"

if [[ "$(id -u)" != 0 ]]; then
  echo "not root: dpkg -i skipped"
  exit 0
fi
if dpkg-query -W -f='${Status}' lemonade-router 2>/dev/null | grep -q "install ok installed"; then
  echo "lemonade-router is already installed on this machine: dpkg -i skipped"
  exit 0
fi
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i"; }
trap 'dpkg --purge lemonade-router >/dev/null 2>&1 || true; cleanup' EXIT
getent passwd lemonade >/dev/null || fail "postinst made no lemonade user"
check_router /usr/bin/lemonade-router /usr/bin/lemonade-server
dpkg --purge lemonade-router >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg --purge"; }
[[ ! -e /usr/bin/lemonade-router ]] || fail "purge left /usr/bin/lemonade-router"
echo "dpkg -i, run, purge: ok"
