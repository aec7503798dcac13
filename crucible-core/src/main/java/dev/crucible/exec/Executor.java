package dev.crucible.exec;

import dev.crucible.egress.Egress;
import dev.crucible.egress.EgressReport;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.proxy.EgressProxy;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.health.Replacements;
import dev.crucible.pool.WarmPool;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Stateless execution: validates a request, writes the program's files, compiles once when the language needs it,
 * runs it in a sandbox and removes every file afterwards. Thread-safe.
 */
public final class Executor {
    private static final System.Logger LOG = System.getLogger("crucible.exec");
    /** Most files a request may carry besides the program. */
    public static final int MAX_FILES = 64;
    /** Most bytes of code plus files. */
    public static final int MAX_TOTAL_BYTES = 16 * 1024 * 1024;

    private final Sandbox sandbox;
    private final RuntimeRegistry runtimes;
    private final Path programsRoot;
    private volatile WarmPool pool;
    private volatile Egress egress = Egress.off();

    /**
     * @param programsRoot a private directory (mode 0711 is set) that holds the programs' files while they exist
     */
    public Executor(Sandbox sandbox, RuntimeRegistry runtimes, Path programsRoot) {
        this.sandbox = sandbox;
        this.runtimes = runtimes;
        this.programsRoot = programsRoot;
        try {
            Files.createDirectories(programsRoot);
            Files.setPosixFilePermissions(programsRoot, PosixFilePermissions.fromString("rwx--x--x"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + programsRoot, e);
        }
    }

    public RuntimeRegistry runtimes() {
        return runtimes;
    }

    /** Serves eligible requests from {@code warmPool} from now on (null: always cold). */
    public void usePool(WarmPool warmPool) {
        this.pool = warmPool;
    }

    /** Grants requests that ask for network within {@code operatorEgress} from now on. */
    public void useEgress(Egress operatorEgress) {
        this.egress = operatorEgress;
    }

    /** The operator's egress ({@link Egress#off()} unless set). */
    public Egress egress() {
        return egress;
    }

    /** The warm pool in use, or null. */
    public WarmPool pool() {
        return pool;
    }

    /**
     * Runs one request to its verdict.
     *
     * @throws RequestException before any sandbox starts, for anything wrong with the request
     */
    public ExecuteResult execute(ExecuteRequest request) throws InterruptedException {
        return execute(request, OutputListener.NONE);
    }

    /**
     * Runs one request to its verdict, passing its output to {@code listener} as it is produced. A request the
     * warm pool serves (no files, the runtime's memory limit) takes a ready sandbox; the rest start cold.
     *
     * @throws RequestException before any sandbox starts, for anything wrong with the request
     */
    public ExecuteResult execute(ExecuteRequest request, OutputListener listener) throws InterruptedException {
        LanguageRuntime runtime = runtimeFor(request);
        return execute(runtime, request, listener).withImageDigest(runtime.imageDigest()).withIsolation(runtime.tier());
    }

    private ExecuteResult execute(LanguageRuntime runtime, ExecuteRequest request, OutputListener listener)
            throws InterruptedException {
        Limits limits = limitsFor(runtime, request);
        List<String> args = validArgs(request.args());
        EgressPolicy granted = egress.grant(request.network(), runtimes.egressAllow(runtime));
        if (granted != null) { // a pooled sandbox has no network: cold, in a namespace with the proxy's listener
            try (EgressProxy proxy = egress.open(granted);
                    Program program = prepare(runtime, request.code(), request.files())) {
                ExecuteResult result = program.run(request.stdin(), args, limits, listener, proxy);
                proxy.awaitIdle(Duration.ofMillis(500));
                return result.withNetwork(EgressReport.of(proxy));
            }
        }
        Sandbox.Launch ready = (request.files() == null || request.files().isEmpty()) ? warmOrForked(runtime, limits)
                : null;
        if (ready != null) {
            if (request.code() == null) {
                ready.abandon();
                throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
            }
            // the cold path's size cap, without encoding the code twice on this hot path (UTF-8 is <= 3 bytes a char)
            if (request.code().length() * 3L > MAX_TOTAL_BYTES) {
                try {
                    ProgramFiles.requireWithinCap(request.code().getBytes(StandardCharsets.UTF_8).length);
                } catch (RequestException e) {
                    ready.abandon();
                    throw e;
                }
            }
            SandboxResult result = ready.complete(WarmPool.payload(request.code(), args, request.stdin()), limits,
                    listener);
            if (!result.neverRan()) {
                return ExecuteResult.of(result, null);
            }
            // the sandbox never took the program (stuck, and replaced; or its zygote was behind): no code of the
            // request ran, so it runs again, once, in a sandbox of its own
            if (result.untaken() != SandboxResult.Untaken.BEHIND) {
                sandbox.replacements().replaced(Replacements.Part.POOL_AGENT,
                        result.untaken() == SandboxResult.Untaken.DIED ? Replacements.Reason.DIED
                                : Replacements.Reason.UNANSWERED, "a warm " + runtime.language() + " sandbox",
                        result.sandboxError() + "; the request runs in a new sandbox");
            } else {
                LOG.log(System.Logger.Level.DEBUG, result.sandboxError() + "; the request runs in a new sandbox");
            }
        }
        try (Program program = prepare(runtime, request.code(), request.files())) {
            return program.run(request.stdin(), args, limits, listener);
        }
    }

    /**
     * A started sandbox waiting for a program of {@code runtime} under {@code limits}: a ready one of the warm pool,
     * else one forked now when the launcher forks such launches (a zygote, docs/zygote.md); null when the request
     * must start cold (another memory limit than the runtime's, no pool agent, or neither source).
     */
    private Sandbox.Launch warmOrForked(LanguageRuntime runtime, Limits limits) throws InterruptedException {
        if (!runtime.poolable() || limits.memoryMb() != runtime.limits().memoryMb()) {
            return null;
        }
        WarmPool warm = pool;
        if (warm != null && warm.serves(runtime, limits)) {
            var ready = warm.take(runtime);
            if (ready.isPresent()) {
                return ready.get();
            }
        }
        SandboxSpec spec = WarmPool.launchSpec(runtime);
        if (!sandbox.forks(spec)) {
            return null;
        }
        Sandbox.Launch launch = sandbox.launch(spec, false);
        if (warm != null) {
            warm.countForked();
        }
        return launch;
    }

    /**
     * Runs one request with its program written under {@code programName} instead of the runtime's file name (Piston
     * keeps a file's own name: argv, tracebacks and compiler messages show it), in a cold sandbox.
     *
     * @throws RequestException before any sandbox starts, for anything wrong with the request or the name
     */
    public ExecuteResult executeNamed(ExecuteRequest request, String programName, OutputListener listener)
            throws InterruptedException {
        LanguageRuntime runtime = runtimeFor(request);
        if (programName == null || programName.equals(runtime.fileName())) {
            return execute(runtime, request, listener).withImageDigest(runtime.imageDigest())
                    .withIsolation(runtime.tier());
        }
        runtime = runtime.withFileName(WorkspacePaths.validate(programName));
        Limits limits = limitsFor(runtime, request);
        List<String> args = validArgs(request.args());
        try (Program program = prepare(runtime, request.code(), request.files())) {
            return program.run(request.stdin(), args, limits, listener).withImageDigest(runtime.imageDigest())
                    .withIsolation(runtime.tier());
        }
    }

    /**
     * The runtime for a language name or alias, in {@code image} when it is not null (an image of the store, or
     * one the operator lets a request pull).
     *
     * @throws RequestException {@code unknown_language}, {@code image_not_found} or {@code runtime_unavailable}
     */
    public LanguageRuntime runtimeFor(String language, String image) {
        if (image == null) {
            return runtimeFor(language);
        }
        LanguageRuntime base = known(language);
        return inImage(base, image, base.limits().timeoutMs());
    }

    /**
     * The runtime {@code request} runs in: as {@link #runtimeFor(String, String)}, waiting for an image being pulled
     * at most the request's own {@code timeout_ms} (then {@code image_pulling} or {@code image_pull_timeout}: a
     * request is never held longer than its timeout by a registry).
     *
     * @throws RequestException as {@link #runtimeFor(String, String)}, and {@code invalid_limits}
     */
    public LanguageRuntime runtimeFor(ExecuteRequest request) {
        LanguageRuntime runtime;
        if (request.image() == null) {
            runtime = behind(runtimeFor(request.language()), request.isolation());
        } else {
            LanguageRuntime base = known(request.language());
            runtime = behind(inImage(base, request.image(), limitsFor(base, request).timeoutMs()), request.isolation());
        }
        if (request.network() != null && runtime.tier() != Isolation.NAMESPACES) {
            throw new RequestException(ErrorCode.ISOLATION_UNAVAILABLE, "egress behind " + runtime.tier().wire()
                    + " is not available yet; ask for no network, or for isolation \"namespaces\"");
        }
        return runtime;
    }

    /**
     * {@code runtime} behind the tier {@code wanted} (null: its own): a request may ask for a stronger wall than its
     * runtime's, never a weaker one.
     *
     * @throws RequestException {@code invalid_request} for a weaker tier, {@code isolation_unavailable}
     *     when this host cannot give the tier (with the reason)
     */
    public LanguageRuntime behind(LanguageRuntime runtime, Isolation wanted) {
        return runtime.behind(wanted, sandbox.host());
    }

    private LanguageRuntime inImage(LanguageRuntime base, String image, long waitMs) {
        return requireAvailable(runtimes.inImage(base, runtimes.images().require(image,
                Duration.ofMillis(waitMs))));
    }

    /**
     * The runtime for a language name or alias.
     *
     * @throws RequestException {@code unknown_language} or {@code runtime_unavailable}
     */
    public LanguageRuntime runtimeFor(String language) {
        return requireAvailable(known(language));
    }

    private LanguageRuntime known(String language) {
        if (language == null || language.isBlank()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "language is required");
        }
        return runtimes.find(language).orElseThrow(() -> new RequestException(ErrorCode.UNKNOWN_LANGUAGE,
                "unknown language '" + language.strip() + "'; known: "
                        + String.join(", ", runtimes.list().stream().map(LanguageRuntime::language).toList())));
    }

    private static LanguageRuntime requireAvailable(LanguageRuntime runtime) {
        if (!runtime.available()) {
            throw new RequestException(ErrorCode.RUNTIME_UNAVAILABLE,
                    "runtime " + runtime.language() + " is not available: " + runtime.unavailableReason());
        }
        return runtime;
    }

    /**
     * The request's limits over the runtime's defaults.
     *
     * @throws RequestException {@code invalid_limits} naming the value out of range
     */
    public static Limits limitsFor(LanguageRuntime runtime, ExecuteRequest request) {
        try {
            return request.limits() == null ? runtime.limits() : request.limits().applyTo(runtime.limits());
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_LIMITS, e.getMessage());
        }
    }

    /**
     * Writes the program and its files and compiles it when the language needs it. The caller closes it.
     *
     * @throws RequestException for missing code, bad file paths or too much data
     */
    public Program prepare(LanguageRuntime runtime, String code, List<FileInput> extraFiles)
            throws InterruptedException {
        if (code == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
        }
        Map<String, byte[]> contents = ProgramFiles.contents(runtime, code, extraFiles);
        Path dir = programsRoot.resolve(ProgramFiles.freshName());
        Map<String, Path> binds = new LinkedHashMap<>();
        try {
            ProgramFiles.write(dir, contents, runtime.compiled(), binds);
        } catch (IOException e) {
            new Program(sandbox, runtime, dir, binds, null).close();
            throw new UncheckedIOException("cannot write the program's files", e);
        }
        ExecuteResult compile = runtime.compiled() ? Program.compile(sandbox, runtime, dir, binds) : null;
        return new Program(sandbox, runtime, dir, binds, compile);
    }

    /** Most arguments a request may pass, and the longest one. */
    public static final int MAX_ARGS = 256;
    public static final int MAX_ARG_CHARS = 4096;

    private static List<String> validArgs(List<String> args) {
        if (args == null) {
            return List.of();
        }
        if (args.size() > MAX_ARGS) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "at most " + MAX_ARGS + " args, got " + args.size());
        }
        for (String arg : args) {
            if (arg == null || arg.indexOf('\0') >= 0 || arg.length() > MAX_ARG_CHARS) {
                throw new RequestException(ErrorCode.INVALID_REQUEST,
                        "each arg must be a string without NUL of at most " + MAX_ARG_CHARS + " characters");
            }
        }
        return args;
    }
}
