package dev.crucible.exec;

import dev.crucible.egress.proxy.EgressProxy;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * A program ready to run many times: its files written once, compiled once. Judging runs one {@code Program}
 * against every test case. Thread-safe: {@link #run} may be called concurrently. {@link #close()} deletes its files.
 */
public final class Program implements AutoCloseable {
    private final Sandbox sandbox;
    private final LanguageRuntime runtime;
    private final Path dir;
    private final Map<String, Path> files;
    private final ExecuteResult compile;

    Program(Sandbox sandbox, LanguageRuntime runtime, Path dir, Map<String, Path> files, ExecuteResult compile) {
        this.sandbox = sandbox;
        this.runtime = runtime;
        this.dir = dir;
        this.files = Map.copyOf(files);
        this.compile = compile;
    }

    /** The compile step's result, or null for an interpreted language. */
    public ExecuteResult compileResult() {
        return compile;
    }

    /** Whether the program can run: interpreted, or compiled with verdict ok. */
    public boolean runnable() {
        return compile == null || compile.ok();
    }

    public LanguageRuntime runtime() {
        return runtime;
    }

    /**
     * Runs the program once.
     *
     * @param stdin standard input, or null
     * @param args arguments after the run command
     * @param limits the run's limits
     * @return the result, with the compile step attached; {@code compile_error} without running when it failed
     */
    public ExecuteResult run(String stdin, List<String> args, Limits limits) throws InterruptedException {
        return run(stdin, args, limits, OutputListener.NONE);
    }

    /** As {@link #run(String, List, Limits)}, passing the output to {@code listener} as it is produced. */
    public ExecuteResult run(String stdin, List<String> args, Limits limits, OutputListener listener)
            throws InterruptedException {
        return run(stdin, args, limits, listener, null);
    }

    /**
     * As {@link #run(String, List, Limits, dev.crucible.sandbox.OutputListener)}, the program's egress through
     * {@code egress} (null: no network). The compile step never has network.
     */
    public ExecuteResult run(String stdin, List<String> args, Limits limits, OutputListener listener,
            EgressProxy egress) throws InterruptedException {
        if (!runnable()) {
            return ExecuteResult.compileFailed(compile);
        }
        SandboxSpec spec = new SandboxSpec(runtime.runArgv(limits, args), runtime.env(), files,
                runtime.compiled() ? dir.resolve("build") : null, false, runtime.binds(), runtime.root(),
                stdin == null ? null : stdin.getBytes(StandardCharsets.UTF_8), limits).withEgress(egress)
                .withIsolation(runtime.tier());
        return ExecuteResult.of(sandbox.run(spec, listener), compile);
    }

    static ExecuteResult compile(Sandbox sandbox, LanguageRuntime runtime, Path dir, Map<String, Path> files)
            throws InterruptedException {
        Limits limits = runtime.compileLimits();
        SandboxSpec spec = new SandboxSpec(runtime.compileArgv(limits), runtime.env(), files, dir.resolve("build"),
                true, runtime.binds(), runtime.root(), null, limits).withIsolation(runtime.tier());
        return ExecuteResult.of(sandbox.run(spec), null);
    }

    @Override
    public void close() {
        try (var walk = Files.walk(dir)) {
            // Files.walk does not follow symbolic links, so a link planted in /build is removed, not followed
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // already gone
        }
    }
}
