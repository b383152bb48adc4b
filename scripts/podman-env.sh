# shellcheck shell=bash disable=SC2034
# Sourced by scripts/build-image and tests/image/smoke_test.sh: the podman
# options both need on a machine like CI's, and that do no harm elsewhere.
#   "${podman[@]}" build "${podman_limits[@]}" ...
#   "${podman[@]}" run "${podman_limits[@]}" ...

# Resource limits, given explicitly. Without them podman asks the runtime for
# its defaults (a million open files, millions of processes), more than a
# machine whose hard limits are lower (CI's: 20000 files) lets a process set,
# and every container fails to start with "error setting rlimit type 7:
# operation not permitted". These stay within the caller's hard limits.
podman_hard_nofile=$(ulimit -Hn)
podman_hard_nproc=$(ulimit -Hu)
[[ "$podman_hard_nofile" == unlimited ]] && podman_hard_nofile=65536
[[ "$podman_hard_nproc" == unlimited ]] && podman_hard_nproc=4096
podman_nofile=$((podman_hard_nofile < 65536 ? podman_hard_nofile : 65536))
podman_nproc=$((podman_hard_nproc < 4096 ? podman_hard_nproc : 4096))
podman_limits=(--ulimit "nofile=$podman_nofile:$podman_nofile"
               --ulimit "nproc=$podman_nproc:$podman_nproc")
unset podman_hard_nofile podman_hard_nproc

# The OCI runtime. Debian's podman prefers crun, which refuses a host whose
# cgroup v1 controllers are mounted beside a cgroup v2 hierarchy that holds
# controllers too ("cgroups in hybrid mode not supported"); runc runs there.
# A host with cgroup v2 alone (cgroup.controllers at the root) keeps the
# default.
podman=(podman)
if [[ ! -e /sys/fs/cgroup/cgroup.controllers ]] && command -v runc >/dev/null 2>&1; then
  podman+=(--runtime runc)
fi
