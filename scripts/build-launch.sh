#!/usr/bin/env bash
# Builds crucible-launch (crucible-core/src/main/c) into the JAR's resources, static so that it needs nothing at
# run time. Called by Maven (generate-resources). Without a C compiler it warns and exits 0: Crucible then launches
# through the portable `sh` + `setpriv` chain, about 2.5 ms slower per run.
set -u
src="$1"; outdir="$2"
arch="$(uname -m)"
mkdir -p "$outdir"
cc="$(command -v gcc || command -v cc || true)"
if [ -z "$cc" ]; then
  echo "[crucible] no C compiler: crucible-launch not built; sandboxes will launch through sh + setpriv" >&2
  exit 0
fi
flags=(-O2 -Wall -Wextra -Werror -D_FORTIFY_SOURCE=2 -fstack-protector-strong)
if "$cc" "${flags[@]}" -static -o "$outdir/crucible-launch-$arch" "$src" 2>/dev/null \
   || "$cc" "${flags[@]}" -o "$outdir/crucible-launch-$arch" "$src"; then
  exit 0
fi
echo "[crucible] crucible-launch did not compile; sandboxes will launch through sh + setpriv" >&2
rm -f "$outdir/crucible-launch-$arch"
exit 0
