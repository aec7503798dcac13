package dev.crucible.cli.serve;

import dev.crucible.Crucible;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.image.Images;
import dev.crucible.image.registry.ImagePuller;
import dev.crucible.image.registry.RegistryCredentials;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.server.CrucibleServer;
import dev.crucible.server.ServerConfig;
import dev.crucible.server.access.Fairness;
import dev.crucible.server.agentsandbox.AgentSandbox;
import dev.crucible.server.agentsandbox.AgentSandboxPorts;
import dev.crucible.server.e2b.E2bApi;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import sun.misc.Signal;

/** {@code crucible serve}: the HTTP service, until SIGTERM or Ctrl-C (then a graceful shutdown). */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Serve the HTTP API (POST /v1/execute, GET /v1/runtimes, /readyz, /livez, /healthz, /metrics,"
                + " /openapi.json).",
            "Tokens come from CRUCIBLE_TOKENS (comma-separated); without one only loopback is allowed."})
public final class ServeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to bind (default 127.0.0.1).")
    String host;

    @Option(names = "--port", defaultValue = "8080", description = "Port (default 8080; 0 picks a free one).")
    int port;

    @Option(names = "--data-dir", paramLabel = "DIR",
            description = "Where durable state lives (env CRUCIBLE_DATA_DIR; default /var/lib/crucible as root, else ~/.local/share/crucible).")
    Path dataDir;

    @Option(names = "--pool", paramLabel = "LANG=N,...",
            description = "Warm sandboxes kept ready per language, or per LANG@IMAGE (env CRUCIBLE_POOL; default"
                    + " python=2,javascript=1).")
    String pool;

    @Option(names = "--max-concurrent", paramLabel = "N", description = "Executions at once (default 2 x cores).")
    Integer maxConcurrent;

    @Option(names = "--max-queued", paramLabel = "N", description = "Executions that may wait; beyond, 429 with"
            + " Retry-After (default 512).")
    Integer maxQueued;

    @Option(names = "--max-running-per-token", paramLabel = "N", description = "Executions one token runs at once"
            + " (default: all but one with several tokens, so another token's run starts at once; all with one).")
    int runningPerToken;

    @Option(names = "--max-queued-per-token", paramLabel = "N", description = "Executions one token may have waiting"
            + " (default: three quarters of --max-queued).")
    int queuedPerToken;

    @Option(names = "--max-concurrent-creates", paramLabel = "N", description = "Sessions made at once; the rest wait"
            + " their turn, shared fairly between tokens (default: one per core).")
    int creating;

    @Option(names = "--max-queued-creates", paramLabel = "N", description = "Session creates that may wait; beyond,"
            + " 429 with Retry-After (default 1000; one token three quarters of it).")
    int createsQueued;

    @Option(names = "--create-wait", paramLabel = "SECONDS", description = "How long a create waits for its turn"
            + " before 503 queue_timeout with Retry-After (429 to E2B's SDKs, which then ask again; default 30).")
    int createWaitS;

    @Option(names = "--shutdown-grace", paramLabel = "SECONDS", description = "On SIGTERM, how long running requests"
            + " get to finish before they are killed (default 10; at least the longest time limit your requests use"
            + " for a drain that kills nothing; the orchestrator's grace period must be longer).")
    Integer shutdownGraceSeconds;

    @Option(names = "--max-sessions", paramLabel = "N", description = "Sessions at once, all tokens (default 3000,"
            + " the most: each has uids of its own).")
    Integer maxSessions;

    @Option(names = "--max-sessions-per-token", paramLabel = "N",
            description = "Sessions at once per token (default 250).")
    Integer maxSessionsPerToken;

    @Option(names = "--sessions-memory-mb", paramLabel = "MIB", description = "The memory all sessions together may"
            + " use: the kernel holds their group to it, and the sum of their requests may not pass it (beyond, creating"
            + " a session answers 429; default: the host's memory less 1 GiB).")
    Long sessionsMemoryMb;

    @Option(names = "--workspace-quota-mb", paramLabel = "MIB", description = "Each session's workspace: a file system"
            + " of this size, its blocks allocated at creation, counted against --sessions-disk-mb (default 1024,"
            + " at least 16).")
    Long workspaceQuotaMb;

    @Option(names = "--session-memory-request-mb", paramLabel = "MIB", description = "What each session is admitted"
            + " for against --sessions-memory-mb: what it is expected to use; its memory_mb stays its limit (default 10:"
            + " an idle Python session; 0: its whole limit, nothing overcommitted).")
    Long sessionMemoryRequestMb;

    @Option(names = "--session-spares", paramLabel = "N|KIND[=N],...", description = "Sessions kept made ahead, so"
            + " that a create asking for the default limits and no network answers at once: N Python ones, or a list of"
            + " KIND=N, each KIND a language, an image, an E2B template (--e2b-template or E2B's own names), with an"
            + " optional @gvisor (e.g. python=1,node=1; default 1; 0: none; at most 16 in all).")
    String sessionSpares;

    @Option(names = "--sessions-disk-mb", paramLabel = "MIB", description = "The sum of all sessions' workspace quotas"
            + " may not pass this; beyond it creating a session answers 507 (default: no cap but the disk's free room,"
            + " less 1 GiB kept free).")
    Long sessionsDiskMb;

    @Option(names = "--isolation", paramLabel = "TIER", description = "The wall of every runtime whose TOML names"
            + " none: namespaces (the default) or gvisor (env CRUCIBLE_ISOLATION).")
    String isolation;

    @Option(names = "--runsc", paramLabel = "PATH", description = "gVisor's runsc for the gvisor tier (default: the"
            + " installed one, apt-get install runsc; env CRUCIBLE_RUNSC).")
    Path runsc;

    @Option(names = "--runsc-platform", paramLabel = "NAME", description = "runsc's platform: ptrace, systrap or kvm"
            + " (default: runsc's own; env CRUCIBLE_RUNSC_PLATFORM).")
    String runscPlatform;

    @Option(names = "--runtimes", paramLabel = "FILE", description = "A runtimes TOML file (env CRUCIBLE_RUNTIMES).")
    Path runtimesFile;

    @Option(names = "--allow-pull", paramLabel = "REGISTRY,...", split = ",",
            description = "Registries a request's unknown image may be pulled from (docker.io, ghcr.io, 127.0.0.1:5000…);"
                    + " default none: a request never triggers a download.")
    List<String> allowPull = List.of();

    @Option(names = "--insecure-registry", paramLabel = "HOST:PORT", split = ",",
            description = "Registries spoken to over plain HTTP (loopback ones always may be).")
    List<String> insecureRegistries = List.of();

    @Option(names = "--pull-max-mb", paramLabel = "MIB", defaultValue = "4096",
            description = "Largest image (compressed) a request may pull (default 4096).")
    long pullMaxMb;

    @Option(names = "--egress-allow", paramLabel = "HOST[:PORT],...", description = "The widest network egress a"
            + " request or session may ask for with \"network\": {\"allow\": [...]} (env CRUCIBLE_EGRESS_ALLOW): pypi.org"
            + " (no port means 443), *.pythonhosted.org, files.example.com:8080, 10.0.0.5:3141. Default none: sandboxes"
            + " have no network at all. Needs root.")
    String egressAllow;

    @Option(names = "--allowed-origin", paramLabel = "ORIGIN,...", description = "Web origins besides the server's"
            + " own whose pages may call it, as a browser sends them, e.g. http://localhost:3000 or"
            + " https://app.example.com (env CRUCIBLE_ALLOWED_ORIGINS). Default none: a request with another Origin"
            + " gets 403.")
    String allowedOrigins;

    @Option(names = "--replica", paramLabel = "NAME", description = "This replica's name when several serve together"
            + " (env CRUCIBLE_REPLICA; default with --peers: the host name, a pod's name in Kubernetes). Session ids"
            + " carry it.")
    String replica;

    @Option(names = "--peers", paramLabel = "URL,...", description = "The other replicas: http://HOST:PORT, or"
            + " dns:NAME:PORT for every address of a headless Service (env CRUCIBLE_PEERS). A request for a session"
            + " another replica holds is forwarded to it; with a shared --data-dir a session whose replica is gone"
            + " resumes here.")
    String peers;

    @Option(names = "--preview-listen", paramLabel = "HOST:PORT", description = "Also serve previews on a listener of"
            + " their own (env CRUCIBLE_PREVIEW_LISTEN), e.g. 127.0.0.1:8081: each session's port gets an origin of its"
            + " own there, http://{port}-{session}.DOMAIN:PORT, where an application's cookies and absolute paths work."
            + " Default none: previews are served on the API's origin only, fenced in.")
    String previewListen;

    @Option(names = "--preview-domain", paramLabel = "DOMAIN", description = "The domain preview hosts are named under"
            + " (env CRUCIBLE_PREVIEW_DOMAIN; default localhost, which browsers resolve to loopback with every"
            + " subdomain); elsewhere point the wildcard *.DOMAIN at this server.")
    String previewDomain;

    @Option(names = "--e2b-template", paramLabel = "NAME=RUNTIME|IMAGE", description = "An E2B templateID and what"
            + " a sandbox of it runs: a runtime's language (python, javascript, bash) or an image of the store, e.g."
            + " --e2b-template data-science=registry.example.com/ds:1 (repeatable). E2B's base and code-interpreter-v1"
            + " are Python sessions unless named here.")
    Map<String, String> e2bTemplates;

    @Option(names = "--agent-sandbox", description = "Serve as one kubernetes-sigs/agent-sandbox pod: one session is the"
            + " sandbox, spoken to through agent-sandbox's python-runtime contract (/execute, /upload, /download,"
            + " /list, /exists; SANDBOX_BASE_DIR, SANDBOX_EXEC_TIMEOUT_SECONDS) on the first of --agent-sandbox-ports"
            + " and sandboxd's REST files (/v1/files/{path}) on the second (docs/kubernetes.md). Crucible's own API stays on --host/--port: give it another port than the"
            + " contracts'.")
    boolean agentSandbox;

    @Option(names = "--agent-sandbox-ports", paramLabel = "RUNTIME,REST,GRPC", defaultValue = "8888,8080,9090",
            description = "The contracts' ports with --agent-sandbox: python-runtime, sandboxd's REST files, sandboxd's"
                    + " gRPC (reserved; default 8888,8080,9090; 0 picks a free one).")
    String agentSandboxPorts;

    @Option(names = "--agent-sandbox-host", paramLabel = "ADDRESS", defaultValue = "127.0.0.1", description = "Where"
            + " the contracts listen with --agent-sandbox (default 127.0.0.1; 0.0.0.0 in a pod, where the template's"
            + " NetworkPolicy lets only agent-sandbox's router in: the contracts take no token).")
    String agentSandboxHost;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        ServerConfig config;
        try {
            ServerConfig base = ServerConfig.fromEnvironment(System.getenv()).withHost(host).withPort(port);
            if (pool != null) {
                base = base.withPool(ServerConfig.poolFrom(pool, base.pool()));
            }
            base = base.withFairness(new Fairness(runningPerToken, queuedPerToken, creating, createsQueued, 0,
                    createWaitS));
            if (maxConcurrent != null || maxQueued != null) {
                base = base.withConcurrency(maxConcurrent == null ? base.maxConcurrent() : maxConcurrent,
                        maxQueued == null ? base.maxQueued() : maxQueued);
            }
            if (shutdownGraceSeconds != null) {
                if (shutdownGraceSeconds < 0 || shutdownGraceSeconds > 86_400) {
                    throw new IllegalArgumentException("--shutdown-grace is 0 to 86400 seconds, not "
                            + shutdownGraceSeconds);
                }
                base = base.withShutdownGrace(Duration.ofSeconds(shutdownGraceSeconds));
            }
            if (agentSandbox) {
                AgentSandboxPorts.parse(agentSandboxPorts); // refused before the engine starts
            }
            config = base.withDataDir(prepareDataDir());
            if (egressAllow != null) {
                config = config.withEgress(ServerConfig.egressFrom(egressAllow));
            }
            if (allowedOrigins != null) {
                config = config.withAllowedOrigins(ServerConfig.allowedOriginsFrom(allowedOrigins));
            }
            if (previewListen != null) {
                config = config.withPreviewListen(previewListen);
            }
            if (previewDomain != null) {
                config = config.withPreviewDomain(previewDomain);
            }
            if (e2bTemplates != null) {
                config = config.withE2bTemplates(e2bTemplates);
            }
            if (replica != null || peers != null) {
                config = config.withCluster(ServerConfig.clusterFrom(
                        replica != null ? replica : config.cluster().replica(),
                        peers != null ? peers : String.join(",", config.cluster().peers())));
            }
            if (maxSessions != null || maxSessionsPerToken != null) {
                config = config.withSessions(config.sessions().withMaxSessions(
                        maxSessions == null ? config.sessions().maxSessions() : maxSessions,
                        maxSessionsPerToken == null ? config.sessions().maxPerOwner() : maxSessionsPerToken));
            }
            if (workspaceQuotaMb != null) {
                if (workspaceQuotaMb < 16) {
                    throw new IllegalArgumentException("--workspace-quota-mb is at least 16");
                }
                config = config.withSessions(config.sessions().withCaps(config.sessions().maxCellBytes(),
                        config.sessions().maxFileBytes(), workspaceQuotaMb * 1024 * 1024));
            }
            if (sessionMemoryRequestMb != null) {
                config = config.withSessions(config.sessions().withMemoryRequest(sessionMemoryRequestMb));
            }
            if (sessionSpares != null) {
                config = config.withSessions(config.sessions().withSpares(
                        E2bApi.spares(sessionSpares, config.e2bTemplates())));
            }
            if (sessionsMemoryMb != null || sessionsDiskMb != null) {
                config = config.withSessions(config.sessions().withBudgets(
                        sessionsMemoryMb == null ? 0 : sessionsMemoryMb,
                        sessionsDiskMb == null ? 0 : sessionsDiskMb * 1024 * 1024));
            }
        } catch (IllegalArgumentException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, e.getMessage()));
        }
        if (config.openWithoutToken() != null) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, config.openWithoutToken()));
        }
        long t0 = System.nanoTime();
        ServerConfig serving = config;
        Images.PullPolicy pull;
        try {
            pull = allowPull.isEmpty() ? Images.PullPolicy.never() : new Images.PullPolicy(Set.copyOf(allowPull),
                    new ImagePuller.Options(Set.copyOf(insecureRegistries), pullMaxMb * 1024 * 1024, Duration.ofSeconds(30),
                            RegistryCredentials.fromEnvironment(System.getenv())));
        } catch (IllegalArgumentException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, e.getMessage()));
        }
        Isolation tier;
        try {
            tier = isolation == null ? null : Isolation.parse(isolation);
        } catch (IllegalArgumentException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, e.getMessage()));
        }
        return CliSupport.withEngine(err, CliSupport.runtimesFile(runtimesFile),
                () -> CliSupport.images(serving.sessions().dataDir(), pull), sandbox -> {
                    SandboxConfig tuned = runsc != null || runscPlatform != null ? sandbox.withRunsc(
                            runsc != null ? runsc : sandbox.runsc(),
                            runscPlatform != null ? runscPlatform : sandbox.runscPlatform()) : sandbox;
                    return tier == null ? tuned : tuned.withIsolation(tier);
                }, engine -> serve(engine, serving, t0, err));
    }

    private int serve(Crucible engine, ServerConfig config, long t0, PrintWriter err) throws InterruptedException {
        CrucibleServer server;
        try {
            server = CrucibleServer.start(config, engine);
        } catch (RuntimeException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, "cannot serve on " + host + ":" + port
                    + ": " + e.getMessage()));
        }
        // SIGTERM and Ctrl-C start a graceful shutdown on this thread (not in a JVM shutdown hook, where Jetty's
        // own stop would race ours)
        CountDownLatch stop = new CountDownLatch(1);
        for (String signal : new String[] {"TERM", "INT"}) {
            Signal.handle(new Signal(signal), s -> stop.countDown());
        }
        err.printf("crucible: serving on http://%s:%d (started in %d ms; %s)%n", host, server.port(),
                (System.nanoTime() - t0) / 1_000_000, config.tokens().isEmpty()
                        ? "no token: loopback only" : config.tokens().size() + " token(s)");
        if (server.previewPort() >= 0) {
            err.printf("crucible: previews on http://{port}-{session}.%s:%d%n", config.previewDomain(),
                    server.previewPort());
        }
        AgentSandbox pod;
        try {
            pod = agentSandbox ? AgentSandbox.start(server.services().sessions(), AgentSandbox.Settings.of(
                    agentSandboxHost, AgentSandboxPorts.parse(agentSandboxPorts), System.getenv(),
                    config.sessions().maxLifetime().toSeconds())) : null;
        } catch (IOException | IllegalArgumentException e) {
            server.close();
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, "cannot serve as an agent-sandbox pod on "
                    + agentSandboxHost + " (" + agentSandboxPorts + "): " + e.getMessage()));
        }
        if (pod != null) {
            err.printf("crucible: agent-sandbox python-runtime on http://%s:%d, sandboxd files on http://%s:%d/v1%n",
                    agentSandboxHost, pod.runtimePort(), agentSandboxHost, pod.restPort());
        }
        engine.sandbox().host().warnings().forEach(w -> err.println("crucible: warning: " + w));
        err.flush();
        stop.await();
        if (pod != null) {
            pod.close();
        }
        err.println("crucible: shutting down (running requests get " + config.shutdownGrace().toSeconds() + " s)");
        err.flush();
        server.close();
        return 0;
    }

    private Path prepareDataDir() {
        Path dir = dataDir != null ? dataDir : ServerConfig.defaultDataDir(System.getenv());
        try {
            Files.createDirectories(dir);
            return dir;
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot create the data directory " + dir + ": " + e.getMessage());
        }
    }
}
