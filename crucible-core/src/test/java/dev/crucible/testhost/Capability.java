package dev.crucible.testhost;

import com.sun.security.auth.module.UnixSystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * What a test may need of the machine it runs on, each with a probe that says why it is missing (null: present).
 *
 * <p>A capability is either <em>promised</em> by a run that installs it ({@code ./run-tests}, CI: see
 * {@link Requires}), so that its absence fails the tests that need it, or a <em>shape</em> of the host (cgroup v1 or
 * v2, a kernel that can idmap {@code /usr}): a host has one shape or the other, so a test that needs the other one is
 * skipped, and CI allows that skip only where {@code .ci/allowed-skips} lists it with its reason.
 */
public enum Capability {
    ROOT(true, () -> uid() == 0 ? null : "not root (uid " + uid() + "); run the tests as root, as ./run-tests does"),
    /** A writable cgroup hierarchy of either version: limits, counters, kills by cgroup. */
    CGROUPS(true, () -> uid() != 0 ? "not root: no writable cgroup"
            : Files.isDirectory(Path.of("/sys/fs/cgroup/pids")) || Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers"))
                    ? null : "no cgroup v1 pids hierarchy and no cgroup v2 tree under /sys/fs/cgroup"),
    CGROUP_V1(false, () -> Files.isDirectory(Path.of("/sys/fs/cgroup/pids")) && uid() == 0 ? null
            : "this host's cgroups are not a writable v1 (separate hierarchies per controller)"),
    CGROUP_V2(false, () -> Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers")) && uid() == 0 ? null
            : "this host's cgroups are not a writable v2 (one unified tree)"),
    /** gVisor's runsc, the "gvisor" isolation tier (the engine's own probe is the finer one: {@link Requires#that}). */
    GVISOR(true, () -> executable("/usr/bin/runsc", "runsc (apt-get install runsc)")),
    /** Egress: a sandbox joins a network namespace of the server's (root, iproute2, nsenter). */
    EGRESS(true, () -> uid() == 0 ? executable("/usr/bin/nsenter", "nsenter (util-linux)") : "not root: no egress"),
    /** Test hosts in network namespaces of their own ({@link NetnsHost}). */
    NETNS(true, () -> uid() != 0 ? "not root: no network namespaces"
            : Files.isExecutable(Path.of("/usr/sbin/ip")) || Files.isExecutable(Path.of("/sbin/ip")) ? null
            : "no ip (apt-get install iproute2)"),
    /** A session with a root of its own: loop mounts and an idmapped {@code /usr} (a kernel shape). */
    SESSION_ROOTS(false, () -> uid() == 0 ? null : "not root: sessions get no root of their own"),
    /** A workspace quota image: mkfs.ext4 and loop devices. */
    WORKSPACE_DISK(true, () -> uid() != 0 ? "not root: no loop devices"
            : !Files.exists(Path.of("/dev/loop-control")) ? "no /dev/loop-control: this host has no loop devices"
            : Files.isExecutable(Path.of("/usr/sbin/mkfs.ext4")) || Files.isExecutable(Path.of("/sbin/mkfs.ext4"))
                    ? null : "no mkfs.ext4 (apt-get install e2fsprogs)"),
    PYTHON3(true, () -> executable("/usr/bin/python3", "/usr/bin/python3 (apt-get install python3)")),
    GCC(true, () -> onPath("gcc", "gcc (apt-get install gcc)")),
    /** The public hostile catalogue beside this clone ({@code ../shared}), to compare our copy with. */
    SHARED_CATALOGUE(false, () -> "the test's own probe says"),
    DPKG(false, () -> Files.isRegularFile(Path.of("/var/lib/dpkg/status")) ? null : "this host has no dpkg"),
    MATPLOTLIB(true, () -> succeeds("matplotlib (apt-get install python3-matplotlib)", "/usr/bin/python3", "-c",
            "import matplotlib")),
    TMUX(true, () -> onPath("tmux", "tmux (apt-get install tmux)")),
    HAPROXY(true, () -> executable("/usr/sbin/haproxy", "haproxy (apt-get install haproxy)")),
    /** A session's desktop: Xvfb, XFCE, xdotool, scrot, x11vnc and noVNC in the host's /usr (scripts/common.sh). */
    DESKTOP(true, () -> Files.isExecutable(Path.of("/usr/share/novnc/utils/novnc_proxy"))
            ? onPath("startxfce4", "xfce4-session (apt-get install xfce4-session xfwm4 xfdesktop4; ./crucible does)")
            : "noVNC (apt-get install novnc xvfb xdotool scrot x11vnc; ./crucible installs the desktop packages)"),
    CHROMIUM(true, () -> onPath("chromium", "chromium (apt-get install chromium)")),
    MKDOCS(true, () -> onPath("mkdocs", "mkdocs (apt-get install mkdocs mkdocs-material)")),
    FLAKE8(true, () -> onPath("flake8", "flake8 (apt-get install flake8)")),
    SKOPEO(true, () -> onPath("skopeo", "skopeo (apt-get install skopeo)")),
    UMOCI(true, () -> onPath("umoci", "umoci (apt-get install umoci)")),
    MMDEBSTRAP(true, () -> onPath("mmdebstrap", "mmdebstrap (apt-get install mmdebstrap)")),
    GETFATTR(true, () -> executable("/usr/bin/getfattr", "getfattr (apt-get install attr)")),
    /** File names are UTF-8 in this JVM (its locale; the build's surefire sets LC_ALL=C.UTF-8). */
    UTF8_PATHS(true, () -> "UTF-8".equals(System.getProperty("sun.jnu.encoding")) ? null
            : "paths are " + System.getProperty("sun.jnu.encoding") + " in this JVM's locale, not UTF-8 (LC_ALL=C.UTF-8)"),
    OPENSSL(true, () -> onPath("openssl", "openssl (apt-get install openssl)")),
    /** A name other than {@code localhost} that resolves to 127.0.0.1 ({@code /etc/hosts}): a shape of the host. */
    LOOPBACK_ALIAS(false, () -> "the test's own probe says"),
    PODMAN(true, () -> onPath("podman", "podman (apt-get install podman runc)")),
    KUBECTL(true, () -> onPath("kubectl", "kubectl")),
    NODE(true, () -> onPath("node", "node and npm (apt-get install nodejs npm)")),
    DOCKER_REGISTRY(true, () -> executable("/usr/bin/docker-registry", "docker-registry (apt-get install docker-registry)")),
    /** The npm clients the tests drive (clients/node-tests: e2b, the MCP SDK, piston-client…), from its lock file. */
    NPM_CLIENTS(true, () -> npmInstalled("clients/node-tests", "e2b")),
    /** The TypeScript SDK (clients/typescript), installed and built. */
    TYPESCRIPT_SDK(true, () -> npmInstalled("clients/typescript", "typescript") != null
            ? npmInstalled("clients/typescript", "typescript")
            : Files.isRegularFile(repo().resolve("clients/typescript/dist/index.js")) ? null
            : "clients/typescript is not built (npm run build there; ./run-tests does)"),
    /** The console's build and browser test tools (esbuild, typescript, playwright-core). */
    CONSOLE_TOOLS(true, () -> Stream.of("esbuild", "typescript", "playwright-core")
            .map(module -> npmInstalled("crucible-server/src/main/console", module)).filter(Objects::nonNull)
            .findFirst().orElse(null));

    private final boolean promisable;
    private final Supplier<String> probe;
    private String missing;
    private boolean probed;

    Capability(boolean promisable, Supplier<String> probe) {
        this.promisable = promisable;
        this.probe = probe;
    }

    /** The name a promise and the report use: {@code CGROUP_V1} is {@code cgroup-v1}. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** False for a shape of the host (a host has one or the other): never promised, its skips listed instead. */
    public boolean promisable() {
        return promisable;
    }

    /** Why this host lacks it, or null when it has it; probed once per JVM. */
    public synchronized String missing() {
        if (!probed) {
            missing = probe.get();
            probed = true;
        }
        return missing;
    }

    private static long uid() {
        return new UnixSystem().getUid();
    }

    private static String executable(String path, String install) {
        return Files.isExecutable(Path.of(path)) ? null : "no " + install;
    }

    private static String onPath(String command, String install) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, command))) {
                return null;
            }
        }
        return "no " + install;
    }

    private static String succeeds(String install, String... argv) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "no " + install + " (the probe did not end)";
            }
            return p.exitValue() == 0 ? null : "no " + install;
        } catch (IOException e) {
            return "no " + install + " (" + e.getMessage() + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "no " + install + " (interrupted)";
        }
    }

    private static String npmInstalled(String dir, String module) {
        return Files.isDirectory(repo().resolve(dir).resolve("node_modules").resolve(module)) ? null
                : dir + " has no node_modules/" + module + " (npm ci there; ./run-tests does)";
    }

    /**
     * Skips the running test unless this host has this capability, or fails it where the run promises it
     * ({@link Requires}).
     */
    public void require() {
        require(missing());
    }

    /**
     * As {@link #require()}, with the caller's own (finer) probe.
     *
     * @param missing why the host lacks it (the engine's words), or null when it has it
     */
    public void require(String missing) {
        Promises.require(this, missing);
    }

    /** The repository's root: the test JVM runs in a module's directory. */
    static Path repo() {
        Path here = Path.of("").toAbsolutePath();
        for (Path p = here; p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("run-tests")) && Files.isDirectory(p.resolve("crucible-core"))) {
                return p;
            }
        }
        return here.getParent() == null ? here : here.getParent();
    }
}
