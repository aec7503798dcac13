package dev.crucible.server.agentsandbox;

import com.sun.net.httpserver.HttpServer;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.SessionLimits;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code crucible serve --agent-sandbox}: this process is one agent-sandbox pod, whose sandbox is one Crucible session
 * (made at once, in the background), spoken to through agent-sandbox's runtime contracts on listeners of their own
 * (the JDK's HTTP server: a path's {@code %2F} reaches the contract, which refuses what climbs out of its base
 * directory itself, as the contract's tests ask): the python-runtime contract ({@link PythonRuntime}) on
 * {@link AgentSandboxPorts#runtime()}, sandboxd's REST filesystem ({@link SandboxdFiles}) on
 * {@link AgentSandboxPorts#rest()}; sandboxd's gRPC process service is not served (its port is reserved). These listeners have no token: in a cluster, the template's NetworkPolicy lets
 * only the router reach them. Closed by its owner before the server. Thread-safe.
 */
public final class AgentSandbox implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(AgentSandbox.class.getName());

    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final PodSession pod;
    private final HttpServer runtime;
    private final HttpServer rest;

    /**
     * What the pod is told: where its contracts listen, the sandbox's base directory ({@code SANDBOX_BASE_DIR}, a path
     * inside the sandbox; {@code /workspace} by default), the longest {@code /execute}
     * ({@code SANDBOX_EXEC_TIMEOUT_SECONDS}; 300 s by default, at most a session command's 600 s), and how long the
     * session may sit idle (the server's longest).
     */
    public record Settings(String host, AgentSandboxPorts ports, String baseDir, Duration execTimeout,
            long idleTimeoutS) {
        /** What sandboxd's {@code /v1/metadata} shows: the contracts' own settings, nothing secret. */
        Map<String, String> metadata() {
            Map<String, String> env = new TreeMap<>();
            env.put("SANDBOX_BASE_DIR", baseDir);
            env.put("SANDBOX_EXEC_TIMEOUT_SECONDS", Double.toString(execTimeout.toMillis() / 1000.0));
            env.put("SANDBOXD_REST_ADDR", "localhost:" + ports.rest());
            env.put("SANDBOXD_RUNTIME", "crucible");
            return env;
        }

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

    private AgentSandbox(PodSession pod, HttpServer runtime, HttpServer rest) {
        this.pod = pod;
        this.runtime = runtime;
        this.rest = rest;
    }

    /**
     * Listens for the contracts and starts making the pod's session.
     *
     * @throws IOException when a port cannot be bound
     */
    public static AgentSandbox start(SessionManager sessions, Settings settings) throws IOException {
        PodSession pod = new PodSession(sessions, settings.baseDir(), settings.idleTimeoutS());
        HttpServer runtime = HttpServer.create(new InetSocketAddress(settings.host(), settings.ports().runtime()), 128);
        HttpServer rest;
        try {
            rest = HttpServer.create(new InetSocketAddress(settings.host(), settings.ports().rest()), 128);
        } catch (IOException e) {
            runtime.stop(0);
            throw e;
        }
        AgentSandbox sandbox = new AgentSandbox(pod, runtime, rest);
        runtime.createContext("/", new PythonRuntime(pod, settings.execTimeout().toMillis()));
        rest.createContext("/", new SandboxdFiles(pod, settings.metadata()));
        for (HttpServer server : List.of(runtime, rest)) {
            server.setExecutor(sandbox.threads);
            server.start();
        }
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

    /** sandboxd's REST filesystem's port (the one bound, when asked for 0). */
    public int restPort() {
        return rest.getAddress().getPort();
    }

    /** Whether the pod's session is made. */
    public boolean ready() {
        return pod.notReady() == null;
    }

    @Override
    public void close() {
        runtime.stop(0);
        rest.stop(0);
        threads.shutdownNow();
    }
}
