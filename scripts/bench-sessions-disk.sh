#!/usr/bin/env bash
# The disk one idle session costs, and how many the data dir's disk admits (issue 50): a fresh `crucible serve` on a
# data dir of its own (on the disk of /var/tmp, or $BENCH_DATA_PARENT), N default sessions created P at a time, then
# the free space taken per admitted session, the refusals by code, and the count this disk would hold. Then every
# session is deleted and the script checks that nothing is left: session directories, mounts, loop devices.
# -D GiB: the data dir on an ext4 of that size of its own (loop-mounted), so that filling it leaves the host's disk
# to everyone else; its free space stands for the host's, and the projection is made for the host's free space too.
# usage: scripts/bench-sessions-disk.sh N [-P parallel] [-D GiB] [-- serve flags...]
#   (needs a build: ./mvnw -B -ntp -q install -DskipTests)
# Run it alone: it shares session uids with test JVMs (flock /tmp/crucible-test.lock scripts/bench-sessions-disk.sh N).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/common.sh"
crucible_find_jdk
n="${1:?usage: bench-sessions-disk.sh N [-P parallel] [-- serve flags...]}"
shift
parallel=8
disk=""
while [ $# -gt 0 ]; do
  case "$1" in
    -P) parallel="$2"; shift 2 ;;
    -D) disk="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
jar="$root/crucible-cli/target/crucible.jar"
[ -f "$jar" ] || crucible_die "no $jar: run ./mvnw -B -ntp -q install -DskipTests first"
host_free="$(df -B1 --output=avail "${BENCH_DATA_PARENT:-/var/tmp}" | tail -1 | tr -d ' ')"
top="$(mktemp -d "${BENCH_DATA_PARENT:-/var/tmp}/crucible-bench-disk.XXXXXX")"
chmod 711 "$top"
data="$top"
if [ -n "$disk" ]; then
  truncate -s "${disk}G" "$top/disk.img"
  mkfs.ext4 -q -F -m 0 "$top/disk.img"
  mkdir "$top/mnt"
  mount -o loop,nosuid,nodev "$top/disk.img" "$top/mnt"
  chmod 711 "$top/mnt"
  data="$top/mnt/data"
  mkdir -m 711 "$data"
fi
work="$(mktemp -d)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
avail() { df -B1 --output=avail "$data" | tail -1 | tr -d ' '; }
leftovers() { # what is left of the sessions under $data: directories, mounts, loop devices
  local dirs mounts loops
  dirs=$(find "$data/sessions" -mindepth 1 -maxdepth 1 ! -name '.*' 2>/dev/null | wc -l)
  mounts=$(grep -c " $data/" /proc/self/mountinfo || true)
  loops=$(cat /sys/block/loop*/loop/backing_file 2>/dev/null | grep -c "^$data/" || true)
  echo "$dirs $mounts $loops"
}

"$JAVA_HOME/bin/java" -jar "$jar" serve --port "$port" --data-dir "$data" --session-spares 0 --pool python=0 \
  --max-sessions-per-token "$n" "$@" 2>"$work/server.log" &
server=$!
cleanup() {
  kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  if [ -n "$disk" ]; then
    for _ in $(seq 100); do umount "$top/mnt" 2>/dev/null && break; sleep 0.1; done
  fi
  rm -rf "$top" "$work"
}
trap cleanup EXIT
until curl -sf -o /dev/null "$base/readyz"; do
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 0.1
done
# the disk probe runs at start (it makes and removes an image): a first session waits for it, and goes
first="$(curl -s -X POST -H 'Content-Type: application/json' -d '{}' "$base/v1/sessions" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
curl -s -o /dev/null -X DELETE "$base/v1/sessions/$first"
for _ in $(seq 600); do [ "$(leftovers)" = "0 0 0" ] && break; sleep 0.1; done
before="$(avail)"
echo "data dir $data: $((before >> 20)) MiB free before; creating $n sessions, $parallel at a time"

start=$(date +%s%N)
seq "$n" | xargs -P "$parallel" -I@ sh -c "curl -s -o '$work/answer.@' -w '%{http_code}\n' -X POST \
  -H 'Content-Type: application/json' -d '{}' '$base/v1/sessions'" > "$work/codes"
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
after="$(avail)"
admitted=$(grep -c '^201$' "$work/codes" || true)
echo "admitted $admitted of $n in $elapsed ms; answers by status:"
sort "$work/codes" | uniq -c | sed 's/^/  /'
echo "refusals by code:"
cat "$work"/answer.* | python3 -c '
import json, sys, collections
codes = collections.Counter()
for line in sys.stdin.read().replace("}{", "}\n{").splitlines():
    try:
        error = json.loads(line).get("error")
    except ValueError:
        continue
    if error:
        codes[error["code"]] += 1
for code, count in codes.most_common():
    print(f"  {count} {code}")'
one=$(cat "$work"/answer.* | python3 -c '
import json, sys
for line in sys.stdin.read().replace("}{", "}\n{").splitlines():
    try:
        print(json.loads(line)["id"]); break
    except (ValueError, KeyError):
        pass' || true)
if [ "$admitted" -gt 0 ]; then
  used=$((before - after))
  per=$((used / admitted))
  echo "disk taken: $((used >> 20)) MiB in all, $((per >> 20)) MiB per idle session"
  if [ -n "$one" ]; then
    echo "one session's directory: $(du -sx --block-size=1M "$data/sessions/$one" 2>/dev/null | cut -f1) MiB allocated," \
      "$(du -sx --apparent-size --block-size=1M "$data/sessions/$one" 2>/dev/null | cut -f1) MiB apparent" \
      "(workspace used inside: $(df -B1M --output=used "$data/sessions/$one/workspace" | tail -1 | tr -d ' ') MiB)"
  fi
  # what admission keeps free (DiskRoom): 1 GiB, or 5% of a smaller file system
  headroom() { local total; total=$(df -B1 --output=size "$1" | tail -1 | tr -d ' '); echo $(( total / 20 < 1 << 30 ? total / 20 : 1 << 30 )); }
  echo "projected: $(( (before - $(headroom "$data")) / per )) idle sessions on the $((before >> 20)) MiB this data dir" \
    "had free; $(( (host_free - $(headroom "$top")) / per )) on the $((host_free >> 20)) MiB free on the host's disk"
  curl -s "$base/readyz" | python3 -c '
import json, sys
for part in json.load(sys.stdin).get("parts", []):
    if part.get("part") == "session_memory":
        print("memory:", part.get("detail"))' || true
fi

echo "deleting $admitted sessions"
cat "$work"/answer.* | python3 -c '
import json, sys
for line in sys.stdin.read().replace("}{", "}\n{").splitlines():
    try:
        print(json.loads(line)["id"])
    except (ValueError, KeyError):
        pass' | xargs -P "$parallel" -I{} curl -s -o /dev/null -X DELETE "$base/v1/sessions/{}"
for _ in $(seq 600); do # a deleted session's loop device is let go once its sandbox's namespace is gone
  [ "$(leftovers)" = "0 0 0" ] && break
  sleep 0.1
done
read -r dirs mounts loops <<<"$(leftovers)"
echo "left after deleting: $dirs session directories, $mounts mounts, $loops loop devices;" \
  "$(( ($(avail) - before) >> 20 )) MiB free beside the start"
[ "$dirs $mounts $loops" = "0 0 0" ] || { echo "LEFT BEHIND" >&2; exit 1; }
