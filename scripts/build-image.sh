#!/usr/bin/env bash
# Builds Crucible's container image without a daemon or a builder: a Debian bookworm root made by mmdebstrap (the
# sandbox tools and the runtimes' interpreters and compilers), a jlinked JRE 25 and the JAR, packed by umoci into an
# OCI image and written by skopeo as one OCI archive. `podman load -i` (or `skopeo copy` to a registry) takes it.
#
#   scripts/build-image.sh [OUTPUT]      default target/crucible-image.oci.tar; env CRUCIBLE_IMAGE_TAG (default latest),
#                                        CRUCIBLE_JAR (a built JAR to pack; default: build crucible-cli's when stale)
#
# Layers, from the one that changes least: the Debian root (cached under ~/.cache/crucible-image, keyed by the package
# list, so a new JAR rebuilds in seconds), the JRE, the JAR. Needs mmdebstrap, umoci and skopeo (apt-get install
# mmdebstrap umoci skopeo) and a JDK 25 for jdeps and jlink; root, or unprivileged user namespaces for mmdebstrap.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/common.sh
. "$root/scripts/common.sh"

out="$(realpath -m "${1:-$root/target/crucible-image.oci.tar}")"
tag="${CRUCIBLE_IMAGE_TAG:-latest}"
suite=bookworm
# what the image must hold, each for a reason given there (the Containerfile installs the same list)
mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]//g' "$root/deploy/image/packages")
for tool in mmdebstrap umoci skopeo; do
  command -v "$tool" >/dev/null 2>&1 || crucible_die "$tool not found; run: apt-get install mmdebstrap umoci skopeo"
done
crucible_find_jdk
if [ -n "${CRUCIBLE_JAR:-}" ]; then
  jar="$CRUCIBLE_JAR" # a JAR built already (the container test's): used as it is
else
  crucible_build_jar "$root"
  jar="$root/crucible-cli/target/crucible.jar"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/crucible-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# 1. The Debian root, once per package list and options. Recommends are not installed (mmdebstrap's default);
# documentation, man pages, locales and the JDK's jmods (only jlink reads them) are never unpacked, copyright files
# are; update-alternatives still needs /usr/share/man/man1 (the JDK's postinst fails without it); mmdebstrap's cleanup
# removes apt's lists and caches; /dev is left empty and resolv.conf and hostname out: the container runtime makes them.
options=(--variant=apt --format=tar
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
  --dpkgopt='path-exclude=/usr/lib/jvm/*/jmods/*'
  --essential-hook='mkdir -p "$1"/usr/share/man/man1'
  --customize-hook='rm -f "$1"/etc/resolv.conf "$1"/etc/hostname')
cache="${XDG_CACHE_HOME:-$HOME/.cache}/crucible-image"
key="$(printf '%s\n' "$suite" "${packages[@]}" "${options[@]}" | sha256sum | cut -c1-16)"
base="$cache/debian-$suite-$key.tar"
if [ ! -s "$base" ]; then
  mkdir -p "$cache"
  echo "crucible: building the Debian root (mmdebstrap, a few minutes once) ..." >&2
  SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(date +%s)}" mmdebstrap "${options[@]}" \
    --include="$(IFS=,; echo "${packages[*]}")" "$suite" "$work/base.tar" >&2
  tar --delete --wildcards -f "$work/base.tar" './dev/?*' 2>/dev/null || true
  rm -f "$cache/debian-$suite-"*.tar # an older recipe's
  mv -f "$work/base.tar" "$base"
fi

# 2. The server's layers: a JRE 25 of the modules the JAR uses (jdeps; jdk.unsupported for sun.misc.Signal, the FFM
# API is java.base's), dated by its JDK so that its digest stays the same from one JAR to the next; then the JAR and
# the `crucible` command. Owned by root, written as tars without root.
mods="$("$JAVA_HOME/bin/jdeps" --ignore-missing-deps --print-module-deps --multi-release 25 "$jar")"
mkdir -p "$work/jre/opt/crucible" "$work/app/opt/crucible" "$work/app/usr/local/bin"
"$JAVA_HOME/bin/jlink" --add-modules "$mods" --strip-debug --no-man-pages --no-header-files --compress=zip-6 \
  --output "$work/jre/opt/crucible/jre"
cp "$jar" "$work/app/opt/crucible/crucible.jar"
install -m 755 "$root/deploy/image/crucible" "$work/app/usr/local/bin/crucible"
layer() { # layer TAR DIR EPOCH
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@"$3" -C "$2" -cf "$1" .
}
layer "$work/jre.tar" "$work/jre" "$(stat -c %Y "$JAVA_HOME/release")"
layer "$work/app.tar" "$work/app" "$(stat -c %Y "$jar")"

# 3. The OCI image: the three layers, and a config that starts the server on all addresses with its state in a volume.
#    The entrypoint is `crucible` and `serve --host 0.0.0.0` only its default arguments: Kubernetes' `args` (the
#    StatefulSet's `serve …`, the Jobs' `eval …`) replace the arguments, never the command.
oci="$work/oci:crucible"
umoci init --layout "$work/oci"
umoci new --image "$oci"
umoci raw add-layer --image "$oci" --history.created_by "mmdebstrap $suite: ${packages[*]}" "$base"
umoci raw add-layer --image "$oci" --history.created_by "jlink $mods" "$work/jre.tar"
umoci raw add-layer --image "$oci" --history.created_by "crucible.jar and /usr/local/bin/crucible" "$work/app.tar"
umoci config --image "$oci" \
  --config.entrypoint /usr/bin/tini --config.entrypoint -- --config.entrypoint /usr/local/bin/crucible \
  --config.cmd serve --config.cmd --host --config.cmd 0.0.0.0 \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env CRUCIBLE_DATA_DIR=/var/lib/crucible \
  --config.volume /var/lib/crucible --config.exposedports 8080/tcp --config.workingdir / \
  --config.stopsignal SIGTERM \
  --config.label org.opencontainers.image.title=crucible \
  --config.label org.opencontainers.image.description="Sandboxed code execution (bubblewrap + seccomp + cgroups)"
umoci gc --layout "$work/oci"
mkdir -p "$(dirname "$out")"
rm -f "$out"
skopeo copy --quiet "oci:$oci" "oci-archive:$out:crucible:$tag"
echo "crucible: wrote $out ($(du -h "$out" | cut -f1)); load it with: podman load -i $out" >&2
