package dev.crucible.client;

import java.util.List;

/**
 * The body of {@code POST /v1/execute}: a program, its input, optional limit overrides and the image of the server's
 * store to run in. Null fields are left out and take the server's defaults.
 */
public record ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
        Limits limits, String image) {

    public ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
            Limits limits) {
        this(language, code, stdin, args, files, limits, null);
    }

    public static ExecuteRequest of(String language, String code) {
        return new ExecuteRequest(language, code, null, null, null, null);
    }

    public ExecuteRequest withStdin(String input) {
        return new ExecuteRequest(language, code, input, args, files, limits, image);
    }

    public ExecuteRequest withArgs(List<String> arguments) {
        return new ExecuteRequest(language, code, stdin, arguments, files, limits, image);
    }

    public ExecuteRequest withFiles(List<FileInput> inputs) {
        return new ExecuteRequest(language, code, stdin, args, inputs, limits, image);
    }

    public ExecuteRequest withLimits(Limits overrides) {
        return new ExecuteRequest(language, code, stdin, args, files, overrides, image);
    }

    /** This request run in {@code reference}, an image of the server's store (e.g. {@code python:3.12-slim}). */
    public ExecuteRequest withImage(String reference) {
        return new ExecuteRequest(language, code, stdin, args, files, limits, reference);
    }

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
