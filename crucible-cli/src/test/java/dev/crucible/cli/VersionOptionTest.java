package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Every subcommand's {@code --help} lists {@code -V, --version}: each prints the version with either. */
class VersionOptionTest {
    @Test
    void everySubcommandPrintsTheVersionItsHelpLists() {
        List<List<String>> paths = new ArrayList<>();
        collect(CrucibleCommand.commandLine(), new ArrayList<>(), paths);
        assertThat(paths).as("the subcommands found").hasSizeGreaterThan(20);
        for (List<String> path : paths) {
            for (String option : List.of("--version", "-V")) {
                CommandLine cli = CrucibleCommand.commandLine();
                StringWriter out = new StringWriter();
                cli.setOut(new PrintWriter(out));
                List<String> args = new ArrayList<>(path);
                args.add(option);
                int exit = cli.execute(args.toArray(String[]::new));
                assertThat(exit).as(String.join(" ", args)).isZero();
                assertThat(out.toString()).as("crucible " + String.join(" ", args)).matches("crucible \\S+\\R");
            }
        }
    }

    /** The paths of the commands that list {@code --version} (the hidden {@code train-startup} does not). */
    private static void collect(CommandLine command, List<String> path, List<List<String>> paths) {
        if (command.getCommandSpec().findOption("--version") != null) {
            paths.add(List.copyOf(path));
        }
        for (Map.Entry<String, CommandLine> sub : command.getSubcommands().entrySet()) {
            if (sub.getKey().equals(sub.getValue().getCommandName())) { // aliases are the same command
                List<String> deeper = new ArrayList<>(path);
                deeper.add(sub.getKey());
                collect(sub.getValue(), deeper, paths);
            }
        }
    }
}
