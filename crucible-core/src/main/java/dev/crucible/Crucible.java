package dev.crucible;

import dev.crucible.exec.Executor;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import java.nio.file.Path;

/**
 * The composition root: wires the sandbox launcher, the runtime registry and the executor by hand.
 *
 * <pre>{@code
 * try (Crucible crucible = Crucible.start(SandboxConfig.defaults(), null)) {
 *     ExecuteResult r = crucible.executor().execute(ExecuteRequest.of("python", "print(1)"));
 * }
 * }</pre>
 */
public final class Crucible implements AutoCloseable {
    private final Sandbox sandbox;
    private final RuntimeRegistry runtimes;
    private final Executor executor;

    private Crucible(Sandbox sandbox, RuntimeRegistry runtimes) {
        this.sandbox = sandbox;
        this.runtimes = runtimes;
        this.executor = new Executor(sandbox, runtimes, Path.of(sandbox.workRoot().toString(), "programs"));
    }

    /**
     * Checks the host, prepares the sandbox launcher and loads the runtimes.
     *
     * @param runtimesFile a user runtimes TOML file, or null for the built-in runtimes only
     * @throws dev.crucible.sandbox.SandboxUnavailableException when the host cannot run sandboxes
     * @throws IllegalArgumentException when the runtimes file is unreadable or invalid
     */
    public static Crucible start(SandboxConfig config, Path runtimesFile) {
        RuntimeRegistry runtimes = RuntimeRegistry.load(runtimesFile);
        return new Crucible(Sandbox.create(config), runtimes);
    }

    public Sandbox sandbox() {
        return sandbox;
    }

    public RuntimeRegistry runtimes() {
        return runtimes;
    }

    public Executor executor() {
        return executor;
    }

    @Override
    public void close() {
        sandbox.close();
    }
}
