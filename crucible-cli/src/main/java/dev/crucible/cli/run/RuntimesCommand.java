package dev.crucible.cli.run;

import dev.crucible.Crucible;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.pool.WarmPool;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.sandbox.Isolation;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code crucible runtimes}: the runtimes, whether each can run here, and the sandbox's isolation facts. */
@Command(name = "runtimes", mixinStandardHelpOptions = true,
        description = "List the runtimes and how the sandbox isolates them on this host.")
public final class RuntimesCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--runtimes", paramLabel = "FILE", description = "A runtimes TOML file adding or replacing runtimes.")
    Path runtimesFile;

    @Override
    public Integer call() {
        var out = spec.commandLine().getOut();
        try (Crucible crucible = CliSupport.start(CliSupport.runtimesFile(runtimesFile))) {
            try { // starts the Python zygote where the host allows one, so that the isolation path printed is the real one
                crucible.executor().execute(ExecuteRequest.of("python", "pass"));
            } catch (RuntimeException e) {
                // no Python here: the report says what it can
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            for (LanguageRuntime r : crucible.runtimes().list()) {
                out.printf("%-12s %-10s %s%s%s%n", r.language(), r.version().isEmpty() ? "-" : r.version(),
                        r.available() ? "available" : "unavailable: " + r.unavailableReason(),
                        !r.available() ? "" : "  isolation: " + r.tier().wire() + ", " + (r.poolable()
                                && crucible.sandbox().forks(WarmPool.launchSpec(r)) ? "zygote" : "spawn"),
                        r.image() == null ? ""
                                : "  (image " + r.image().reference() + (r.imageDigest() == null ? ""
                                        : " " + r.imageDigest()) + ")");
            }
            out.println();
            crucible.sandbox().host().describe().forEach(out::println);
            String gvisor = crucible.sandbox().host().isolationDescription(Isolation.GVISOR);
            out.println("isolation gvisor: " + (gvisor != null ? gvisor : "unavailable ("
                    + crucible.sandbox().host().isolationUnavailable(Isolation.GVISOR) + ")"));
            crucible.sandbox().host().warnings().forEach(w -> out.println("warning: " + w));
            out.flush();
            return 0;
        } catch (CliSupport.Failure f) {
            return CliSupport.fail(spec.commandLine().getErr(), f);
        }
    }
}
