#!/bin/bash
# A 5-step Dockerfile built by `crucible image build -f` (cold: Crucible has no per-step cache) against `podman build`
# of the same file and base in the same run (--no-cache, then cached); prints each run's seconds and the ratio, and
# `crucible image ls` as the CLI's floor (JVM start). Needs podman, root, the built JAR, and the Debian test image
# tarball that the core tests make (TestImages: /tmp/crucible-test-images/debian-bookworm-python-tabulate-1.tar).
# Usage: flock /tmp/crucible-test.lock scripts/bench-dockerfile.sh [RUNS]
set -euo pipefail
RUNS=${1:-3}
REPO=$(cd "$(dirname "$0")/.." && pwd)
JAVA=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
JAR=$REPO/crucible-cli/target/crucible.jar
ROOT_TAR=${ROOT_TAR:-/tmp/crucible-test-images/debian-bookworm-python-tabulate-1.tar}
WORK=$(mktemp -d /tmp/bench-dockerfile.XXXXXX)
BASE=localhost/crucible-bench/debian-python:1
trap 'rm -rf "$WORK"; podman rmi -f $(podman images -q --filter reference="localhost/crucible-bench/*") >/dev/null 2>&1 || true' EXIT
podman import -q "$ROOT_TAR" "$BASE" >/dev/null
podman save -q --format docker-archive -o "$WORK/base.tar" "$BASE"
"$JAVA" -jar "$JAR" image import --data-dir "$WORK/data" "$WORK/base.tar" >/dev/null
mkdir "$WORK/ctx"
printf 'print("hello")\n' > "$WORK/ctx/main.py"
cat > "$WORK/ctx/Dockerfile" <<DF
FROM $BASE
ENV APP=/opt/app
WORKDIR /opt/app
COPY main.py .
RUN python3 -c "import tabulate" && python3 main.py > built.txt
RUN mkdir -p data && for i in \$(seq 1 500); do echo \$i > data/\$i; done
DF
seconds() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
floor=$(seconds "$JAVA" -jar "$JAR" image ls --data-dir "$WORK/data")
echo "crucible image ls (the CLI's floor): ${floor}s"
for i in $(seq 1 "$RUNS"); do
  c=$(seconds "$JAVA" -jar "$JAR" image build --data-dir "$WORK/data" -q -f "$WORK/ctx/Dockerfile" "$WORK/ctx" \
      -t "localhost/crucible-bench/app:$i")
  p=$(seconds podman build --no-cache -q -f "$WORK/ctx/Dockerfile" -t "localhost/crucible-bench/app:$i" "$WORK/ctx")
  pc=$(seconds podman build -q -f "$WORK/ctx/Dockerfile" -t "localhost/crucible-bench/app:c$i" "$WORK/ctx")
  echo "run $i: crucible ${c}s  podman --no-cache ${p}s (crucible/podman $(echo "scale=2; $c / $p" | bc))" \
       " podman cached ${pc}s"
done
