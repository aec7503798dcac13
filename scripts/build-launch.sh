#!/usr/bin/env bash
# Builds crucible-launch, crucible-init and the zygote's child set-up (crucible-core/src/main/c) into the JAR's resources, static so that it needs nothing at
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
# crucible-init (the same directory): a zygote child namespace's pid 1, without a C library (its start-up is the cost)
init_src="$(dirname "$src")/crucible-init.c"
if ! "$cc" -O2 -Wall -Wextra -Werror -static -nostdlib -ffreestanding -fno-stack-protector \
     -fno-asynchronous-unwind-tables -fno-pie -no-pie -o "$outdir/crucible-init-$arch" "$init_src" 2>/dev/null; then
  echo "[crucible] crucible-init did not compile for $arch; zygote children get crucible-launch --init as pid 1" >&2
  rm -f "$outdir/crucible-init-$arch"
fi
# crucible-zygote-child (zygote-child.c): a zygote child's set-up, a library the Python zygote loads; without it the
# zygote is off (every run is spawned)
if ! "$cc" "${flags[@]}" -shared -fPIC -o "$outdir/crucible-zygote-child-$arch" "$(dirname "$src")/zygote-child.c"; then
  echo "[crucible] zygote-child.c did not compile for $arch; runs will be spawned, never forked by a zygote" >&2
  rm -f "$outdir/crucible-zygote-child-$arch"
fi
# crucible-supervisor (crucible-supervisor.c): a session's sandbox program, static so that it runs in any image; without
# it a session is its interpreter alone (no commands)
if ! "$cc" "${flags[@]}" -static -o "$outdir/crucible-supervisor-$arch" "$(dirname "$src")/crucible-supervisor.c"; then
  echo "[crucible] crucible-supervisor did not compile for $arch; sessions will run no commands" >&2
  rm -f "$outdir/crucible-supervisor-$arch"
fi
if "$cc" "${flags[@]}" -static -o "$outdir/crucible-launch-$arch" "$src" 2>/dev/null \
   || "$cc" "${flags[@]}" -o "$outdir/crucible-launch-$arch" "$src"; then
  exit 0
fi
echo "[crucible] crucible-launch did not compile; sandboxes will launch through sh + setpriv" >&2
rm -f "$outdir/crucible-launch-$arch"
exit 0
