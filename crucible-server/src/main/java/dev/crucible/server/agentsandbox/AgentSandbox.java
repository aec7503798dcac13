package dev.crucible.server.agentsandbox;

import com.sun.net.httpserver.HttpServer;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.SessionLimits;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code crucible serve --agent-sandbox}: this process is one agent-sandbox pod, whose sandbox is one Crucible session
 * (made at once, in the background), spoken to through agent-sandbox's runtime contracts on listeners of their own
 * (the JDK's HTTP server: a path's {@code %2F} reaches the contract, which refuses what climbs out of its base
 * directory itself, as the contract's tests ask): the python-runtime contract ({@link PythonRuntime}) on
 * {@link AgentSandboxPorts#runtime()}. These listeners have no token: in a cluster, the template's NetworkPolicy lets
 * only the router reach them. Closed by its owner before the server. Thread-safe.
 */
public final class AgentSandbox implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(AgentSandbox.class.getName());

    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final PodSession pod;
    private final HttpServer runtime;

    /**
     * What the pod is told: where its contracts listen, the sandbox's base directory ({@code SANDBOX_BASE_DIR}, a path
     * inside the sandbox; {@code /workspace} by default), the longest {@code /execute}
     * ({@code SANDBOX_EXEC_TIMEOUT_SECONDS}; 300 s by default, at most a session command's 600 s), and how long the
     * session may sit idle (the server's longest).
     */
    public record Settings(String host, AgentSandboxPorts ports, String baseDir, Duration execTimeout,
            long idleTimeoutS) {
        public Settings {
            if (!baseDir.startsWith("/")) {
                throw new IllegalArgumentException("SANDBOX_BASE_DIR is an absolute path inside the sandbox (such as"
                        + " /workspace or /workspace/app), not '" + baseDir + "'");
            }
            baseDir = baseDir.length() > 1 && baseDir.endsWith("/") ? baseDir.substring(0, baseDir.length() - 1)
                    : baseDir;
        }

        /** The contracts' variables read from {@code env}, as the python-runtime example reads them. */
        public static Settings of(String host, AgentSandboxPorts ports, Map<String, String> env, long idleTimeoutS) {
            String base = env.getOrDefault("SANDBOX_BASE_DIR", "").strip();
            return new Settings(host, ports, base.isEmpty() ? "/workspace" : base,
                    execTimeout(env.get("SANDBOX_EXEC_TIMEOUT_SECONDS")), idleTimeoutS);
        }

        /** As python-runtime's: not a finite number above 0 is the default, with a warning; capped at 600 s. */
        static Duration execTimeout(String raw) {
            double seconds;
            try {
                seconds = raw == null ? 300 : Double.parseDouble(raw.strip());
            } catch (NumberFormatException e) {
                seconds = Double.NaN;
            }
            if (!(Double.isFinite(seconds) && seconds > 0)) {
                LOG.log(System.Logger.Level.WARNING, "Ignoring invalid SANDBOX_EXEC_TIMEOUT_SECONDS=" + raw
                        + "; using default of 300 seconds");
                seconds = 300;
            }
            long ms = Math.max(1, Math.round(seconds * 1000));
            long most = SessionLimits.MAXIMUM.timeoutMs();
            if (ms > most) {
                LOG.log(System.Logger.Level.WARNING, "SANDBOX_EXEC_TIMEOUT_SECONDS=" + raw + " is past a session"
                        + " command's longest; using " + most / 1000 + " seconds");
                ms = most;
            }
            return Duration.ofMillis(ms);
        }
    }

    private AgentSandbox(PodSession pod, HttpServer runtime) {
        this.pod = pod;
        this.runtime = runtime;
    }

    /**
     * Listens for the contracts and starts making the pod's session.
     *
     * @throws IOException when a port cannot be bound
     */
    public static AgentSandbox start(SessionManager sessions, Settings settings) throws IOException {
        PodSession pod = new PodSession(sessions, settings.baseDir(), settings.idleTimeoutS());
        HttpServer runtime = HttpServer.create(new InetSocketAddress(settings.host(), settings.ports().runtime()), 128);
        AgentSandbox sandbox = new AgentSandbox(pod, runtime);
        runtime.createContext("/", new PythonRuntime(pod, settings.execTimeout().toMillis()));
        runtime.setExecutor(sandbox.threads);
        runtime.start();
        sandbox.threads.execute(() -> {
            try {
                pod.id();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "agent-sandbox: the pod's session could not be made (the next"
                        + " call tries again): " + e.getMessage());
            }
        });
        return sandbox;
    }

    /** The python-runtime contract's port (the one bound, when asked for 0). */
    public int runtimePort() {
        return runtime.getAddress().getPort();
    }

    /** Whether the pod's session is made. */
    public boolean ready() {
        return pod.notReady() == null;
    }

    @Override
    public void close() {
        runtime.stop(0);
        threads.shutdownNow();
    }
}
