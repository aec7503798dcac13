# Shared by ./crucible and ./run-tests: find a JDK 25 and make sure the sandbox prerequisites are installed.
# Sourced, not run. Prints one line and exits non-zero when something is missing that it cannot install.

crucible_die() { echo "crucible: $*" >&2; exit "${CRUCIBLE_EXIT:-3}"; }

# JAVA_HOME if it is a JDK 25 or newer, else the first JDK 25+ under /usr/lib/jvm.
crucible_find_jdk() {
  local candidate version
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] && [ -x "$candidate/bin/javac" ] || continue
    version=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$candidate/release" 2>/dev/null)
    if [ -n "$version" ] && [ "$version" -ge 25 ]; then
      export JAVA_HOME="$candidate"
      return 0
    fi
  done
  CRUCIBLE_EXIT=3 crucible_die "no JDK 25 found (JAVA_HOME or /usr/lib/jvm); install one, e.g. apt-get install openjdk-25-jdk-headless or Temurin 25"
}

# Builds crucible-cli/target/crucible.jar with ./mvnw when it is missing or older than the sources under $1.
crucible_build_jar() {
  local root="$1" jar="$1/crucible-cli/target/crucible.jar"
  if [ ! -f "$jar" ] || [ -n "$(find "$root" -path "$root/.git" -prune -o \( -name '*.java' -o -name 'pom.xml' -o -name '*.toml' \) \
        -newer "$jar" -print -quit 2>/dev/null)" ]; then
    echo "crucible: building (./mvnw package) ..." >&2
    (cd "$root" && ./mvnw -B -ntp -q -DskipTests package >&2) || CRUCIBLE_EXIT=5 crucible_die "the build failed; see the output above"
  fi
}

# bubblewrap, libseccomp and (as root) setpriv: installed with apt-get when root, else the exact command is printed.
# gVisor's runsc (the "gvisor" isolation tier) is installed too when root, best effort: without it that tier says why.
crucible_ensure_sandbox_tools() {
  local missing=()
  crucible_ensure_desktop_packages
  if [ "$(id -u)" -eq 0 ] && ! [ -x /usr/bin/runsc ] && ! [ -e "${CRUCIBLE_DATA_DIR:-$HOME/.local/share/crucible}/.no-runsc" ] \
      && command -v apt-get >/dev/null 2>&1; then
    echo "crucible: installing runsc (gVisor, for isolation \"gvisor\")" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runsc; } >/dev/null 2>&1 \
      || { echo "crucible: runsc is not installable here; isolation \"gvisor\" stays off" >&2
           mkdir -p "${CRUCIBLE_DATA_DIR:-$HOME/.local/share/crucible}" 2>/dev/null \
             && touch "${CRUCIBLE_DATA_DIR:-$HOME/.local/share/crucible}/.no-runsc" 2>/dev/null; }
  fi
  command -v bwrap >/dev/null 2>&1 || [ -x /usr/bin/bwrap ] || missing+=(bubblewrap)
  ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || ls /usr/lib/*/libseccomp.so.2 >/dev/null 2>&1 \
    || missing+=(libseccomp2)
  [ "$(id -u)" -ne 0 ] || [ -x /usr/bin/setpriv ] || missing+=(util-linux)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "crucible: installing ${missing[*]} (sandbox prerequisites)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2 \
      || CRUCIBLE_EXIT=4 crucible_die "could not install ${missing[*]}; run: apt-get install ${missing[*]}"
    return 0
  fi
  CRUCIBLE_EXIT=4 crucible_die "missing sandbox prerequisites; run: sudo apt-get install ${missing[*]}"
}

# A session's desktop (docs/desktop.md, E2B's `desktop` template): the X server, XFCE, input and screenshot tools, VNC and
# noVNC, found by sessions in the host's /usr. Installed when root, best effort, as runsc: without them a desktop says why.
crucible_ensure_desktop_packages() {
  local tool missing=0 marker="${CRUCIBLE_DATA_DIR:-$HOME/.local/share/crucible}/.no-desktop"
  for tool in Xvfb xdpyinfo xdotool scrot x11vnc xrandr startxfce4 xfwm4 xfdesktop dbus-launch gtk-launch xterm netstat websockify; do
    command -v "$tool" >/dev/null 2>&1 || missing=1
  done
  [ -x /usr/share/novnc/utils/novnc_proxy ] || missing=1
  [ "$missing" -eq 1 ] && [ "$(id -u)" -eq 0 ] && ! [ -e "$marker" ] && command -v apt-get >/dev/null 2>&1 || return 0
  echo "crucible: installing the desktop packages (Xvfb, XFCE, xdotool, scrot, x11vnc, noVNC) for desktop sessions" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends xvfb x11-utils \
      x11-xserver-utils xdotool scrot x11vnc novnc websockify net-tools xterm xfce4-session xfwm4 xfdesktop4 dbus-x11 \
      libgtk-3-bin xdg-utils procps; } >/dev/null 2>&1 \
    || { echo "crucible: the desktop packages are not installable here; desktop sessions stay off" >&2
         mkdir -p "${marker%/*}" 2>/dev/null && touch "$marker" 2>/dev/null; }
}

# What only the tests use (a session's matplotlib figure; tmux, the terminal that presses Ctrl-C in the session
# test; podman and the image tools for the container test): best effort, as root with apt-get; a test whose tool is
# missing fails where the run promises its capabilities (./run-tests does), else it is skipped and says why.
crucible_ensure_test_packages() {
  local missing=()
  /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || missing+=(python3-matplotlib)
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  command -v jq >/dev/null 2>&1 || missing+=(jq)                           # the docs examples (DocsExamplesIT) pipe through it
  [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ] || missing+=(e2fsprogs) # session workspace images
  command -v umoci >/dev/null 2>&1 || missing+=(umoci)                     # OCI layouts for the image tests
  command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)                   # docker-save and OCI archives
  command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry) # a local registry for the pull tests
  command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)           # a Debian image with Python for the run tests
  command -v getfattr >/dev/null 2>&1 || missing+=(attr)                   # no xattr survives unpacking
  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip) # pip install through the egress proxy
  /usr/bin/python3 -c 'import pytest' 2>/dev/null || missing+=(python3-pytest) # the Python client's tests
  /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv) # pip install ./clients/python in a venv
  /usr/bin/python3 -c 'import wheel, setuptools' 2>/dev/null || missing+=(python3-wheel python3-setuptools) # its build
  [ -x /usr/sbin/haproxy ] || missing+=(haproxy)                          # replicas behind a balancer (ReplicasIT)
  [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)            # test hosts: a network namespace each (NetnsHost)
  command -v podman >/dev/null 2>&1 || missing+=(podman)                   # ContainerIT runs the image under podman
  [ -x /usr/sbin/runc ] || missing+=(runc)     # crun 1.8 refuses hybrid cgroup hosts; ContainerIT uses runc there
  command -v mkdocs >/dev/null 2>&1 || missing+=(mkdocs)                   # the docs site: DocsSiteTest builds it --strict
  command -v flake8 >/dev/null 2>&1 || missing+=(flake8)                   # the Python client's linter (LintersTest)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)               # a real browser loads a preview page (PreviewTest)
  [ -f /usr/share/mkdocs/themes/material/mkdocs_theme.yml ] || /usr/bin/python3 -c 'import material' 2>/dev/null \
    || missing+=(mkdocs-material)                                           # its theme (mkdocs.yml)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "crucible: installing ${missing[*]} (for the tests)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"; } >&2 || echo "crucible: ${missing[*]} not installed; the tests that need them fail where the run promises them (CRUCIBLE_TEST_PROMISE)" >&2
  fi
  return 0
}

# The npm packages the tests drive against the server (clients/node-tests), installed from the lock file; the
# TypeScript SDK (clients/typescript): its pinned dev dependencies (the compiler, the agent frameworks), then its build;
# and the console's (crucible-server/src/main/console: esbuild, CodeMirror, playwright-core for its browser test).
crucible_ensure_node_packages() {
  local dir
  command -v npm >/dev/null 2>&1 || { echo "crucible: npm not found; the npm client tests fail where the run promises them" >&2; return 0; }
  for dir in "$1/clients/node-tests" "$1/clients/typescript" "$1/crucible-server/src/main/console"; do
    if ! { [ -d "$dir/node_modules" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; }; then
      echo "crucible: installing the npm packages of ${dir#"$1"/}" >&2
      (cd "$dir" && npm ci --no-audit --no-fund >&2) \
        || echo "crucible: npm ci failed in $dir; the tests that need it fail where the run promises them" >&2
    fi
  done
  dir="$1/clients/typescript"
  if [ -d "$dir/node_modules/typescript" ] && [ -n "$(find "$dir/src" "$dir/package.json" -newer "$dir/dist/index.js" \
      2>/dev/null | head -1)$( [ -f "$dir/dist/index.js" ] || echo missing)" ]; then
    echo "crucible: building the TypeScript SDK (clients/typescript)" >&2
    (cd "$dir" && npm run --silent build >&2) || echo "crucible: the TypeScript SDK did not build; its tests will fail" >&2
  fi
  return 0
}

# The container test (crucible-cli ContainerIT: the image under podman, a few minutes cold) runs when what it needs is
# here: root, podman, and the image build's mmdebstrap, umoci and skopeo. Exports CRUCIBLE_CONTAINER_IT=1 then.
crucible_enable_container_test() {
  local tool
  [ "$(id -u)" -eq 0 ] || { echo "crucible: not root: the container test is skipped" >&2; return 0; }
  for tool in podman mmdebstrap umoci skopeo; do
    command -v "$tool" >/dev/null 2>&1 || { echo "crucible: no $tool: the container test is skipped" >&2; return 0; }
  done
  export CRUCIBLE_CONTAINER_IT="${CRUCIBLE_CONTAINER_IT:-1}"
}
