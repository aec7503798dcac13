package dev.crucible.cli;

import dev.crucible.cli.bench.BenchCommand;
import dev.crucible.cli.eval.EvalCommand;
import dev.crucible.cli.eval.RewardCommand;
import dev.crucible.cli.image.ImageCommand;
import dev.crucible.cli.run.RunCommand;
import dev.crucible.cli.run.RuntimesCommand;
import dev.crucible.cli.serve.McpCommand;
import dev.crucible.cli.serve.ServeCommand;
import dev.crucible.cli.session.SessionCommand;
import dev.crucible.cli.support.ExitCodes;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code crucible} command: one subcommand per task; {@code crucible --help} lists them. */
@Command(
        name = "crucible",
        mixinStandardHelpOptions = true,
        versionProvider = CrucibleCommand.Version.class,
        description = "Sandboxed code execution for AI agents and LLM evaluation.",
        subcommands = {ServeCommand.class, RunCommand.class, SessionCommand.class, EvalCommand.class, RewardCommand.class,
            RuntimesCommand.class, ImageCommand.class, McpCommand.class, BenchCommand.class,
            TrainStartupCommand.class})
public final class CrucibleCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        int code = ExitCodes.SANDBOX_ERROR;
        try {
            code = execute(args);
        } catch (Throwable t) { // an Error out of a command (its JAR replaced under it): one line, and the JVM still ends
            System.err.println("crucible: " + t);
        } finally {
            System.exit(code); // a library's non-daemon thread (the MCP SDK's session sweeper) must not keep it alive
        }
    }

    /**
     * The command line, every subcommand given the version: each one's {@code --help} lists {@code -V, --version}
     * (their {@code mixinStandardHelpOptions}), so each must print it, not an empty line.
     */
    public static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new CrucibleCommand());
        giveVersion(cli, new Version());
        return cli;
    }

    private static void giveVersion(CommandLine command, CommandLine.IVersionProvider version) {
        command.getCommandSpec().versionProvider(version);
        command.getSubcommands().values().forEach(sub -> giveVersion(sub, version));
    }

    /** Runs the command line and returns the exit code (for tests and {@link #main}). */
    public static int execute(String... args) {
        CommandLine cli = commandLine();
        cli.setParameterExceptionHandler((ex, a) -> {
            // one line, no usage dump: the user asked for something we do not take
            ex.getCommandLine().getErr().println("crucible: " + ex.getMessage() + " (see --help)");
            return ExitCodes.USAGE;
        });
        cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("crucible: " + ex.getMessage());
            return ExitCodes.SANDBOX_UNAVAILABLE;
        });
        cli.setExecutionStrategy(parsed -> {
            CommandLine.ParseResult leaf = parsed;
            while (leaf.hasSubcommand()) {
                leaf = leaf.subcommand();
            }
            CliLogging.configure(leaf.commandSpec().userObject() instanceof ServeCommand
                    ? CliLogging.Audience.OPERATOR : CliLogging.Audience.USER);
            return new CommandLine.RunLast().execute(parsed);
        });
        return cli.execute(args);
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = CrucibleCommand.class.getPackage().getImplementationVersion();
            return new String[] {"crucible " + (v == null ? "dev" : v)};
        }
    }
}
