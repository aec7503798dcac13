package dev.crucible.cli.eval;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.eval.dataset.DatasetRun;
import dev.crucible.eval.dataset.ResultsMerge;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code crucible eval merge OUT IN…}: shards' results files as one, with the pass@k of a single run. */
@Command(name = "merge", mixinStandardHelpOptions = true,
        description = {"Merge the --out files of a dataset run's shards (eval dataset --shard I/N) into OUT.",
            "Prints the summary with pass@k exactly as one run of all the samples gives it.",
            "Refuses a sample twice in a file or with two verdicts (exit 84); with --format and",
            "--problems (and --samples) also a missing or an unknown sample."})
final class MergeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "OUT")
    Path out;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "IN")
    List<Path> inputs;

    @Option(names = "--k", paramLabel = "K,..", defaultValue = "1,10,100", description = "pass@k values (default 1,10,100).")
    String ks;

    @Option(names = "--format", paramLabel = "F", description = "The dataset's format: with --problems, every sample must be there.")
    String format;

    @Option(names = "--problems", paramLabel = "FILE", description = "The dataset's problems (as given to eval dataset).")
    Path problems;

    @Option(names = "--samples", paramLabel = "FILE", description = "The samples file (as given to eval dataset; none: reference solutions).")
    Path samples;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        try {
            List<Integer> kList = DatasetCommand.ks(ks);
            if ((format == null) != (problems == null) || (samples != null && problems == null)) {
                throw new CliSupport.Failure(ExitCodes.USAGE, "give --format and --problems together (and --samples"
                        + " if the run had one), or none of them");
            }
            List<Path> readable = new ArrayList<>(inputs);
            if (problems != null) {
                readable.add(problems);
            }
            if (samples != null) {
                readable.add(samples);
            }
            for (Path file : readable) {
                if (!Files.isReadable(file)) {
                    throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read " + file);
                }
            }
            List<DatasetRun.SampleId> expected;
            try {
                expected = problems == null ? null : DatasetRun.sampleIds(format, problems, samples);
            } catch (IllegalArgumentException e) {
                throw new CliSupport.Failure(ExitCodes.USAGE, e.getMessage());
            }
            ResultsMerge.Summary summary;
            try {
                summary = ResultsMerge.merge(inputs, out, expected, kList);
            } catch (ResultsMerge.Refused e) {
                throw new CliSupport.Failure(ExitCodes.MERGE_REFUSED, "not merged: " + e.getMessage());
            } catch (IOException e) {
                throw new CliSupport.Failure(ExitCodes.NO_INPUT, e.getMessage());
            }
            PrintWriter stdout = spec.commandLine().getOut();
            stdout.println(CliSupport.json().writeValueAsString(Map.of("summary", summary)));
            stdout.flush();
            return 0;
        } catch (CliSupport.Failure f) {
            return CliSupport.fail(err, f);
        }
    }
}
