#!/usr/bin/env bash
# cgroup v1 only: gives a Crucible container a cgroup subtree of its own that its (user-namespaced) root may write,
# which podman does by itself on cgroup v2 (the container's group is chowned to its root there) but not on v1, where
# it mounts the hierarchies read-only unless --privileged. Run as root on the host; see docs/container.md
# ("Running in a container").
#
#   podman create $(deploy/podman/cgroup-v1.sh flags NAME) --name NAME ...   # before: the parent, and what to add
#   deploy/podman/cgroup-v1.sh delegate NAME                                # after create, before podman start
#   deploy/podman/cgroup-v1.sh remove NAME                                  # after podman rm
#
# `flags` makes crucible-NAME in the memory, pids, cpu and cpuacct hierarchies (owned by root: its limits stay root's)
# and prints --cgroup-parent=/crucible-NAME plus one writable bind of that parent over each hierarchy the container
# sees. `delegate` makes the container's own group under it and hands the directory, cgroup.procs and tasks to the
# container's root (its host uid from podman inspect): it can then make groups below its own, move its processes
# between them and set their limits, and nothing else. The limits podman sets on the container's own group stay
# root's.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 flags|delegate|remove NAME" >&2; exit 2; }
action="$1"; name="$2"
[ -d /sys/fs/cgroup/memory ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ] \
  || { echo "$0: not a cgroup v1 host (on v2: --cgroupns private, unmask=/proc/*:/sys/fs/cgroup)" >&2; exit 3; }
parent="crucible-$name"
# the hierarchies Crucible writes, each once (cpu and cpuacct are often one mount, cpu,cpuacct, with a link each)
mapfile -t hierarchies < <(for c in memory pids cpu cpuacct; do basename "$(realpath "/sys/fs/cgroup/$c")"; done \
  | sort -u)

case "$action" in
  flags)
    for h in "${hierarchies[@]}"; do
      mkdir -p "/sys/fs/cgroup/$h/$parent"
      printf -- '-v /sys/fs/cgroup/%s/%s:/sys/fs/cgroup/%s:rw ' "$h" "$parent" "$h"
    done
    printf -- '--cgroup-parent=/%s\n' "$parent"
    ;;
  delegate)
    id="$(podman inspect --format '{{.Id}}' "$name")"
    # the host uid and gid that the container's root is mapped to (the first mapping, 0:HOST:SIZE)
    uid="$(podman inspect --format '{{index .HostConfig.IDMappings.UIDMap 0}}' "$name" 2>/dev/null | cut -d: -f2)"
    gid="$(podman inspect --format '{{index .HostConfig.IDMappings.GIDMap 0}}' "$name" 2>/dev/null | cut -d: -f2)"
    [ -n "$uid" ] && [ "$uid" != 0 ] && [ -n "$gid" ] \
      || { echo "$0: $name has no user namespace (--uidmap): its root is the host's; nothing delegated" >&2; exit 4; }
    for h in "${hierarchies[@]}"; do
      dir="/sys/fs/cgroup/$h/$parent/libpod-$id"
      mkdir -p "$dir"
      chown "$uid:$gid" "$dir" "$dir/cgroup.procs" "$dir/tasks"
    done
    ;;
  remove)
    for h in "${hierarchies[@]}"; do
      # the deepest groups first; a group that still holds a process stays (and says so)
      [ ! -d "/sys/fs/cgroup/$h/$parent" ] || find "/sys/fs/cgroup/$h/$parent" -depth -type d -exec rmdir {} \;
    done
    ;;
  *) echo "usage: $0 flags|delegate|remove NAME" >&2; exit 2 ;;
esac
