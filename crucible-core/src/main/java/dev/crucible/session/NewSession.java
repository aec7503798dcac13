package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.SandboxHost;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.workspace.WorkspaceCopy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A create request checked against the manager's configuration and runtimes, before anything is reserved or stored:
 * the runtime it runs (in its image), its limits, idle timeout and restore mode, defaults filled in.
 */
record NewSession(LanguageRuntime runtime, SessionLimits limits, long idleTimeoutS, String restore, String onIdle) {

    /**
     * Checks {@code request}; an image it names that is being pulled is waited for as long as a cell may run.
     *
     * @param host whether this host can give the tier asked for ({@code isolation}: stronger than the runtime's only)
     * @throws RequestException for an unknown language or one without sessions, an image that cannot be had, bad
     *     limits, idle timeout, restore or on_idle; as {@link LanguageRuntime#behind} for the isolation asked for
     */
    static NewSession check(SessionManager.CreateRequest request, SessionConfig config, RuntimeRegistry runtimes,
            SandboxHost host) {
        String language = request.language() == null || request.language().isBlank() ? "python" : request.language();
        LanguageRuntime runtime = runtimes.find(language).orElseThrow(() -> new RequestException(
                ErrorCode.UNKNOWN_LANGUAGE, "unknown language '" + language.strip() + "'"));
        if (request.image() != null) {
            // an image being pulled is waited for as long as a cell may run, then image_pulling / image_pull_timeout
            runtime = runtimes.inImage(runtime, runtimes.images().require(request.image(),
                    Duration.ofMillis(config.limits().timeoutMs())));
        }
        runtime = runtime.behind(request.isolation(), host);
        if (!runtime.interactive()) {
            throw new RequestException(ErrorCode.RUNTIME_UNAVAILABLE, "runtime " + runtime.language()
                    + (runtime.available() ? " has no session agent; sessions run: " + interactiveLanguages(runtimes)
                            : " is not available: " + runtime.unavailableReason()));
        }
        SessionLimits limits = request.limits() == null ? config.limits() : request.limits();
        limits = SessionLimits.DEFAULT.with(limits.memoryMb(), limits.pids(), limits.cpus(), limits.timeoutMs(),
                limits.outputBytes()); // validated
        long idle = request.idleTimeoutS() == null ? config.idleTimeout().toSeconds() : request.idleTimeoutS();
        if (idle < 1 || idle > config.maxLifetime().toSeconds()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "idle_timeout_s must be between 1 and "
                    + config.maxLifetime().toSeconds());
        }
        String restore = request.restore() == null ? "none" : request.restore();
        if (!restore.equals("none") && !restore.equals("replay")) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "restore must be \"none\" or \"replay\"");
        }
        String onIdle = request.onIdle() == null ? "delete" : request.onIdle();
        if (!onIdle.equals("delete") && !onIdle.equals("pause")) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "on_idle must be \"delete\" or \"pause\"");
        }
        return new NewSession(runtime, limits, idle, restore, onIdle);
    }

    /**
     * Fills a new session's workspace (when {@code fresh}: not a fork's or a snapshot's, which get their own copy) with
     * what its image keeps under {@code /workspace}: a committed session's files.
     */
    void seed(boolean fresh, Path workspace, int uid) throws IOException {
        if (fresh && runtime.root() instanceof SandboxRoot.Image(Path root)) {
            Path kept = root.resolve("workspace");
            try (var entries = Files.list(kept)) {
                if (entries.findAny().isPresent()) {
                    WorkspaceCopy.copy(kept, workspace, uid);
                }
            }
        }
    }

    private static String interactiveLanguages(RuntimeRegistry runtimes) {
        return String.join(", ", runtimes.list().stream().filter(LanguageRuntime::interactive)
                .map(LanguageRuntime::language).toList());
    }
}
