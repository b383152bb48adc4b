#!/usr/bin/env bash
# The container image, run as an operator would run it (docs/install.md):
# its own non-root user, a read-only root file system with no tmpfs, the
# cache volume the only writable path, the port published with -p, an API
# key from a podman secret, and the fake llama-server (tests/fakes) mounted
# in as the llama.cpp CPU backend, with the library it links beside it as a
# llama.cpp release keeps its libraries.
#
#   tests/image/smoke_test.sh IMAGE FAKES_BIN_DIR [WORK_DIR]
#
# Prints one line per check, the figures, and last
# `image: N passed, M failed`.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/scripts/podman-env.sh"
image=$1
fakes=$(cd "$2" && pwd)
work=${3:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
name="lemonade-smoke-$$"
secret="lemonade-smoke-key-$$"
uid=10001
drain_timeout=10

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() {
  failed=$((failed + 1))
  echo "not ok - $1"
  if [[ -n "${2:-}" ]]; then while IFS= read -r line; do echo "    $line"; done <<<"$2"; fi
}
check_not() {  # check_not NAME COMMAND...: passes when the command fails
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then not_ok "$what"; else ok "$what"; fi
}
check() {  # check NAME COMMAND...: passes when the command succeeds
  local what=$1
  shift
  local output
  if output=$("$@" 2>&1); then ok "$what"; else not_ok "$what" "$output"; fi
}
cleanup() {
  "${podman[@]}" rm -i -f -t 0 "$name" "$name-baseline" >/dev/null 2>&1
  "${podman[@]}" secret rm "$secret" >/dev/null 2>&1
  rm -rf "$work/volume" "$work/backend"
}
[[ -n "${SMOKE_KEEP:-}" ]] || trap cleanup EXIT
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The volume: a model file and the catalogue entry that serves it as
# user.smoke, owned by the image's user as the operator prepares it.
vol="$work/volume"
rm -rf "$vol"
mkdir -p "$vol/models"
echo "GGUF fake model smoke.gguf" >"$vol/models/smoke.gguf"
cat >"$vol/user_models.json" <<'EOF'
{"smoke": {"checkpoint": "/var/lib/lemonade/models/smoke.gguf", "recipe": "llamacpp",
           "source": "local_path"}}
EOF
chown -R "$uid:$uid" "$vol"
chmod 0750 "$vol"
find "$vol" -exec touch -d @0 {} +
before=$(cd "$vol" && find . | sort)

# The backend folder: the fake llama-server and the shared library it links
# that the image does not have (the router puts the binary's folder on
# LD_LIBRARY_PATH, as for a llama.cpp release).
backend="$work/backend"
rm -rf "$backend"
mkdir -p "$backend"
cp "$fakes/llama-server" "$backend/"
ldd "$fakes/llama-server" | awk '/libcpp-httplib/ {print $3}' | while read -r lib; do
  cp -L "$lib" "$backend/"
done
chmod -R a+rX "$backend"

key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
printf %s "$key" | "${podman[@]}" secret create "$secret" - >/dev/null

t_start=$(now_ms)
"${podman[@]}" run -d --name "$name" "${podman_limits[@]}" \
  --read-only --read-only-tmpfs=false \
  -v "$vol:/var/lib/lemonade" -v "$backend:/opt/llama.cpp:ro" \
  -p 127.0.0.1::8000 \
  --secret "$secret,type=env,target=LEMONADE_API_KEY" \
  -e LEMONADE_LLAMACPP_CPU_BIN=/opt/llama.cpp/llama-server \
  -e LEMONADE_DRAIN_TIMEOUT=$drain_timeout \
  -e HF_ENDPOINT=http://127.0.0.1:9 -e LEMONADE_RELEASES_URL=http://127.0.0.1:9 \
  "$image" >"$work/run.out" 2>&1 || { cat "$work/run.out"; echo "image: 0 passed, 1 failed (podman run)"; exit 1; }
port=$("${podman[@]}" port "$name" 8000/tcp | sed 's/.*://')
base="http://127.0.0.1:$port"
status() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }

# Readiness is polled: nothing inside the container can signal the host.
ready_ms=""
for _ in $(seq 600); do
  if [[ "$(status "$base/ready")" == 200 ]]; then
    ready_ms=$(($(now_ms) - t_start))
    break
  fi
  [[ "$("${podman[@]}" inspect --format '{{.State.Running}}' "$name")" == true ]] || break
  sleep 0.05
done
if [[ -z "$ready_ms" ]]; then
  not_ok "the router becomes ready within 30 s" "$("${podman[@]}" logs "$name" 2>&1 | tail -20)"
  echo "image: $passed passed, $failed failed"
  exit 1
fi
ok "the router answers /ready 200 (${ready_ms} ms after podman run)"
check "/live answers 200 without a key" test "$(status "$base/live")" = 200

router_pid=$("${podman[@]}" inspect --format '{{.State.Pid}}' "$name")
check "the router runs as uid $uid, not root" \
  grep -Eq "^Uid:\s+$uid\s+$uid\s" "/proc/$router_pid/status"
check "the root file system is read-only, with no tmpfs on /tmp" \
  "${podman[@]}" exec "$name" sh -c '! touch /etc/x 2>/dev/null && ! touch /tmp/x 2>/dev/null && ! touch /var/tmp/x 2>/dev/null && touch /var/lib/lemonade/.w && rm /var/lib/lemonade/.w'

refused=$(curl -s --max-time 5 -w ' %{http_code}' "$base/api/v1/models")
check "a model route answers 401 invalid_api_key without a key" grep -q 'invalid_api_key.* 401$' <<<"$refused"
auth=(-H "Authorization: Bearer $key")
load=$(curl -s --max-time 30 -w ' %{http_code}' "${auth[@]}" -H 'Content-Type: application/json' \
  -d '{"model_name": "user.smoke"}' "$base/api/v1/load")
check "the model loads with the key" grep -q ' 200$' <<<"$load"
chat=$(curl -s --max-time 30 "${auth[@]}" -H 'Content-Type: application/json' \
  -d '{"model": "user.smoke", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}' \
  "$base/api/v1/chat/completions")
check "a chat is answered by the mounted backend" grep -q '"content":"The quick brown' <<<"$chat"
backend_line=$("${podman[@]}" top "$name" hpid user args 2>/dev/null | grep '/opt/llama.cpp/llama-server' | head -1)
backend_pid=$(awk '{print $1}' <<<"$backend_line")
check "the backend runs inside the container as uid $uid" \
  grep -Eq "^Uid:\s+$uid\s+$uid\s" "/proc/${backend_pid:-0}/status"

healthcheck=$("${podman[@]}" image inspect --format '{{.HealthCheck}}' "$image")
check "the image has a HEALTHCHECK (lemonade-server status)" grep -q 'lemonade-server status' <<<"$healthcheck"
check "its HEALTHCHECK passes" "${podman[@]}" healthcheck run "$name"
# podman creates its mount points (/etc/hosts, /etc/resolv.conf,
# /opt/llama.cpp) in the container's layer; a container of the same image
# with the same mounts that only runs `true` shows the same changes.
changes=$("${podman[@]}" diff "$name" 2>&1)
"${podman[@]}" create "${podman_limits[@]}" --read-only --read-only-tmpfs=false \
  -v "$vol:/var/lib/lemonade" -v "$backend:/opt/llama.cpp:ro" \
  --entrypoint true --name "$name-baseline" "$image" >/dev/null 2>&1
"${podman[@]}" start -a "$name-baseline" >/dev/null 2>&1
baseline=$("${podman[@]}" diff "$name-baseline" 2>&1)
"${podman[@]}" rm -f "$name-baseline" >/dev/null 2>&1
same_changes() { [[ "$changes" == "$baseline" ]] || { echo "router: $changes"; echo "true: $baseline"; return 1; }; }
check "podman diff: nothing written outside the volume" same_changes

# Stop: SIGTERM, with podman's own SIGKILL only after the drain timeout.
t_stop=$(now_ms)
"${podman[@]}" stop -t $((drain_timeout + 5)) "$name" >/dev/null 2>&1
stop_ms=$(($(now_ms) - t_stop))
exit_code=$("${podman[@]}" inspect --format '{{.State.ExitCode}}' "$name")
if [[ "$exit_code" == 0 && $stop_ms -lt $((drain_timeout * 1000)) ]]; then
  ok "podman stop (SIGTERM): exit 0 in ${stop_ms} ms, within the ${drain_timeout} s drain timeout"
else
  not_ok "podman stop (SIGTERM) within the drain timeout" "exit code $exit_code after ${stop_ms} ms"
fi
check_not "no process is left: the backend (host pid ${backend_pid:-?}) is gone" \
  grep -qs llama-server "/proc/${backend_pid:-0}/cmdline"
logs=$("${podman[@]}" logs "$name" 2>&1)
# The router stopped the backend itself (SIGTERM to its process group, exit
# code 0) before it exited; not the kernel, which kills whatever is left in
# the container's pid namespace once its first process ends.
stopped_in_order() {
  local backend_at router_at
  backend_at=$(grep -n "stopped 'user.smoke' (shutdown; exit code 0" <<<"$logs" | head -1 | cut -d: -f1)
  router_at=$(grep -n "\] stopped$" <<<"$logs" | tail -1 | cut -d: -f1)
  [[ -n "$backend_at" && -n "$router_at" && "$backend_at" -lt "$router_at" ]] || { tail -5 <<<"$logs"; return 1; }
}
check "the router stopped the backend (exit code 0), then itself" stopped_in_order
# (podman inspect does show it: podman lists a type=env secret among the
# container's variables, to whoever may run podman.)
key_logged() { grep -qF "$key" <<<"$logs"; }
check_not "the API key is not in the log" key_logged
check_not "the API key is in no file of the volume" grep -rqF "$key" "$vol"
after=$(cd "$vol" && find . | sort)
installed() { grep -qE '^\./(bin|hub)(/|$)' <<<"$after"; }
check_not "nothing was downloaded or installed: the volume holds no bin/ or hub/" installed

echo "smoke: start-to-ready ${ready_ms} ms, stop ${stop_ms} ms; volume before: $(wc -l <<<"$before") entries, after: $(wc -l <<<"$after")"
echo "image: $passed passed, $failed failed"
((failed == 0))
