#!/usr/bin/env bash
# Image benchmarks (issue 13), ratios against baselines taken in the same run:
#   1. pull of one image from a loopback registry (Debian's docker-registry): `crucible image pull` (download,
#      verify, unpack) against `skopeo copy` to an OCI directory (download and verify only), alternating rounds; then
#      the same of a five-layer image (the layers download three at a time), and both in a warm JVM;
#   2. the first run after the pull against a run on the host's /usr;
#   3. warm POST /v1/execute p50 in the image runtime against the host runtime (crucible bench --image).
# Needs root, docker-registry, skopeo, umoci and mmdebstrap (apt-get install docker-registry skopeo umoci mmdebstrap).
# Usage: scripts/bench-image.sh [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-3}"
work="$(mktemp -d /tmp/crucible-bench-image.XXXXXX)"
chmod 755 "$work"
port="${CRUCIBLE_BENCH_REGISTRY_PORT:-15123}"
registry=""
server=""
cleanup() {
  [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  [ -n "$registry" ] && kill "$registry" 2>/dev/null && wait "$registry" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# the image: a Debian bookworm root with Python (the tests' image; built once and cached)
tarball="${TMPDIR:-/tmp}/crucible-test-images/debian-bookworm-python-tabulate-1.tar"
if [ ! -f "$tarball" ]; then
  mkdir -p "$(dirname "$tarball")"
  mmdebstrap --variant=minbase --mode=root --include=python3-minimal,python3-tabulate \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$tarball.partial" >/dev/null 2>&1
  mv "$tarball.partial" "$tarball"
fi
umoci init --layout "$work/layout" >/dev/null
umoci new --image "$work/layout:bench" >/dev/null
umoci raw add-layer --image "$work/layout:bench" "$tarball" >/dev/null

cat > "$work/registry.yml" <<YML
version: 0.1
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
YML
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry=$!
until curl -sf -o /dev/null "http://127.0.0.1:$port/v2/"; do sleep 0.05; done
skopeo copy -q --dest-tls-verify=false "oci:$work/layout:bench" "docker://127.0.0.1:$port/bench/debian-python:1"
ref="127.0.0.1:$port/bench/debian-python:1"
size=$(du -sb "$work/registry/docker/registry/v2/blobs" | cut -f1)
echo "image: $ref, $((size / 1048576)) MiB in the registry (compressed)"

# crucible's pull = download + verify + unpack; its download phase ends at the "unpacking" progress line.
# Baselines: skopeo copy to an OCI dir (download + verify), and skopeo copy + umoci unpack (the whole pipeline).
crucible_ms=(); download_ms=(); skopeo_ms=(); umoci_ms=()
for r in $(seq "$rounds"); do
  rm -rf "$work/oci" "$work/bundle" "$work/data"
  sync
  t=$(date +%s%N); skopeo copy -q --src-tls-verify=false "docker://$ref" "oci:$work/oci:bench"; skopeo_ms+=("$(ms "$t")")
  t=$(date +%s%N); umoci unpack --image "$work/oci:bench" "$work/bundle" >/dev/null; umoci_ms+=("$(( $(ms "$t") + ${skopeo_ms[-1]} ))")
  sync
  t=$(date +%s%N)
  "$root/crucible" image pull --data-dir "$work/data" "$ref" 2>&1 >/dev/null | while IFS= read -r line; do
    case "$line" in unpacking*) echo $(( ($(date +%s%N) - t) / 1000000 )) > "$work/download.ms";; esac
  done
  crucible_ms+=("$(ms "$t")"); download_ms+=("$(cat "$work/download.ms")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
c=$(median "${crucible_ms[@]}"); d=$(median "${download_ms[@]}"); s=$(median "${skopeo_ms[@]}"); u=$(median "${umoci_ms[@]}")
files=$(tar tf "$tarball" | wc -l)
echo "pull (median of $rounds, one layer of $files entries):"
echo "  download + verify: crucible ${d} ms; skopeo copy to an OCI dir ${s} ms; ratio $(awk "BEGIN {printf \"%.2f\", $d / $s}")"
echo "  download + verify + unpack: crucible image pull ${c} ms; skopeo copy + umoci unpack ${u} ms; ratio $(awk "BEGIN {printf \"%.2f\", $c / $u}")"

# a multi-layer image (the Debian root and four layers of 16 MiB of random files): layers download three at a time
# (issue 33), as skopeo copies them; the download phase against skopeo's, CLI and warm JVM alike
umoci new --image "$work/layout:layers" >/dev/null
umoci raw add-layer --image "$work/layout:layers" "$tarball" >/dev/null
for i in 1 2 3 4; do
  mkdir -p "$work/rand$i/data$i"
  head -c $((16 << 20)) /dev/urandom > "$work/rand$i/data$i/blob"
  tar -C "$work/rand$i" -cf "$work/rand$i.tar" "data$i"
  umoci raw add-layer --image "$work/layout:layers" "$work/rand$i.tar" >/dev/null
done
skopeo copy -q --dest-tls-verify=false "oci:$work/layout:layers" "docker://127.0.0.1:$port/bench/layers:1"
lref="127.0.0.1:$port/bench/layers:1"
ldownload_ms=(); lskopeo_ms=()
for r in $(seq "$rounds"); do
  rm -rf "$work/oci" "$work/ldata"
  sync
  t=$(date +%s%N); skopeo copy -q --src-tls-verify=false "docker://$lref" "oci:$work/oci:layers"; lskopeo_ms+=("$(ms "$t")")
  sync
  t=$(date +%s%N)
  "$root/crucible" image pull --data-dir "$work/ldata" "$lref" 2>&1 >/dev/null | while IFS= read -r line; do
    case "$line" in unpacking*) echo $(( ($(date +%s%N) - t) / 1000000 )) > "$work/download.ms";; esac
  done
  ldownload_ms+=("$(cat "$work/download.ms")")
done
ld=$(median "${ldownload_ms[@]}"); ls_=$(median "${lskopeo_ms[@]}")
echo "pull of 5 layers (median of $rounds): download + verify: crucible ${ld} ms; skopeo copy ${ls_} ms; ratio $(awk "BEGIN {printf \"%.2f\", $ld / $ls_}")"

# the same pull in a warm JVM (a server's --allow-pull), fresh store each time; the last rounds are the warm ones
java="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
"$java" --enable-native-access=ALL-UNNAMED -cp "$root/crucible-cli/target/crucible.jar" "$root/scripts/PullBench.java" \
  "$ref" "$work" $((rounds + 2)) 2>/dev/null | tail -n "$rounds"
"$java" --enable-native-access=ALL-UNNAMED -cp "$root/crucible-cli/target/crucible.jar" "$root/scripts/PullBench.java" \
  "$lref" "$work" $((rounds + 2)) 2>/dev/null | tail -n "$rounds"

t=$(date +%s%N); echo 'import tabulate; print(1)' | CRUCIBLE_DATA_DIR="$work/data" "$root/crucible" run --image "$ref" -l python - >/dev/null; first=$(ms "$t")
t=$(date +%s%N); echo 'print(1)' | CRUCIBLE_DATA_DIR="$work/data" "$root/crucible" run -l python - >/dev/null; host=$(ms "$t")
echo "first run after the pull: crucible run --image ${first} ms; on the host's /usr ${host} ms; ratio $(awk "BEGIN {printf \"%.2f\", $first / $host}")"

sport=$((port + 1))
"$root/crucible" serve --port "$sport" --data-dir "$work/data" --pool "python=2,python@$ref=2" 2>"$work/serve.log" &
server=$!
until curl -sf -o /dev/null "http://127.0.0.1:$sport/healthz"; do kill -0 "$server" || { cat "$work/serve.log"; exit 1; }; sleep 0.05; done
"$root/crucible" bench --url "http://127.0.0.1:$sport" -c 1 -n 300 --warmup 100 --image "$ref"
