package dev.crucible.client;

import java.util.List;

/**
 * The body of {@code POST /v1/execute}: a program, its input, optional limit overrides and the image of the server's
 * store to run in. Null fields are left out and take the server's defaults.
 */
public record ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
        Limits limits, String image, Network network, String isolation) {

    public ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
            Limits limits) {
        this(language, code, stdin, args, files, limits, null, null);
    }

    public ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
            Limits limits, String image) {
        this(language, code, stdin, args, files, limits, image, null);
    }

    public ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
            Limits limits, String image, Network network) {
        this(language, code, stdin, args, files, limits, image, network, null);
    }

    public static ExecuteRequest of(String language, String code) {
        return new ExecuteRequest(language, code, null, null, null, null);
    }

    public ExecuteRequest withStdin(String input) {
        return new ExecuteRequest(language, code, input, args, files, limits, image, network, isolation);
    }

    public ExecuteRequest withArgs(List<String> arguments) {
        return new ExecuteRequest(language, code, stdin, arguments, files, limits, image, network, isolation);
    }

    public ExecuteRequest withFiles(List<FileInput> inputs) {
        return new ExecuteRequest(language, code, stdin, args, inputs, limits, image, network, isolation);
    }

    public ExecuteRequest withLimits(Limits overrides) {
        return new ExecuteRequest(language, code, stdin, args, files, overrides, image, network, isolation);
    }

    /** This request run in {@code reference}, an image of the server's store (e.g. {@code python:3.12-slim}). */
    public ExecuteRequest withImage(String reference) {
        return new ExecuteRequest(language, code, stdin, args, files, limits, reference, network, isolation);
    }

    /**
     * This request with network egress to {@code allow} ({@code HOST[:PORT]} entries, no port meaning 443), which must
     * be within the server's list ({@code serve --egress-allow}); the server answers 422 {@code egress_not_allowed}
     * otherwise.
     */
    public ExecuteRequest withNetwork(List<String> allow) {
        return new ExecuteRequest(language, code, stdin, args, files, limits, image, new Network(null, allow),
                isolation);
    }

    /**
     * This request run behind {@code tier}: {@code namespaces} or {@code gvisor}, at least the runtime's own; a tier
     * the server cannot give is 422 {@code isolation_unavailable}.
     */
    public ExecuteRequest withIsolation(String tier) {
        return new ExecuteRequest(language, code, stdin, args, files, limits, image, network, tier);
    }

    /** {@code "network": {"mode": ..., "allow": [...]}}: egress through the server's allowlist proxy. */
    public record Network(String mode, List<String> allow) {}

    /** A file placed in the sandbox's working directory before the run; {@code encoding} "utf8" (default) or "base64". */
    public record FileInput(String path, String content, String encoding) {
        public static FileInput text(String path, String content) {
            return new FileInput(path, content, null);
        }
    }

    /** Limit overrides; null keeps the runtime's default. */
    public record Limits(Long timeoutMs, Long cpuMs, Integer memoryMb, Integer outputBytes, Integer pids) {
        public static Limits timeout(long ms) {
            return new Limits(ms, null, null, null, null);
        }
    }
}
