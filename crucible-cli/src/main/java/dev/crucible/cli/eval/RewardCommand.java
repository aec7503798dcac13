package dev.crucible.cli.eval;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.eval.reward.Reward;
import dev.crucible.server.services.Services;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import tools.jackson.core.JacksonException;

/**
 * {@code crucible reward FILE|-}: the code-execution reward of {@code POST /v1/reward} for one JSON request, or for
 * each line of a JSONL file (scored in parallel, one result line each, in order).
 */
@Command(name = "reward", mixinStandardHelpOptions = true,
        description = {"Score the last assistant message's code: {messages, expected_output?, test_cases?, language?}.",
            "A JSON object gives one result; JSON lines give one result line each (scored in parallel)."})
public final class RewardCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE", description = "The request (JSON or JSONL), or - for stdin.")
    String file;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        PrintWriter out = spec.commandLine().getOut();
        String text;
        try {
            text = file.equals("-") ? new String(System.in.readAllBytes(), StandardCharsets.UTF_8)
                    : Files.readString(Path.of(file));
        } catch (IOException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read " + file + ": " + e.getMessage()));
        }
        List<Reward.Request> items = new ArrayList<>();
        boolean single;
        try {
            String trimmed = text.strip();
            single = trimmed.lines().count() <= 1 || !trimmed.lines().allMatch(l -> l.isBlank() || l.strip().startsWith("{"))
                    || isOneObject(trimmed);
            if (single) {
                items.add(CliSupport.json().readValue(trimmed, Reward.Request.class));
            } else {
                int number = 0;
                for (String line : trimmed.lines().toList()) {
                    number++;
                    if (!line.isBlank()) {
                        try {
                            items.add(CliSupport.json().readValue(line, Reward.Request.class));
                        } catch (JacksonException e) {
                            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.INVALID_REQUEST, file + ":"
                                    + number + ": not a reward request: " + e.getOriginalMessage()));
                        }
                    }
                }
            }
        } catch (JacksonException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.INVALID_REQUEST, "not a reward request: "
                    + e.getOriginalMessage().replaceAll("\\s*\\(start marker.*$", "")));
        }
        return CliSupport.withEngine(err, null, engine -> {
            Reward reward = Services.stateless(engine).reward();
            if (single) {
                out.println(CliSupport.json().writeValueAsString(reward.score(items.getFirst())));
            } else {
                for (Reward.Result r : reward.scoreAll(items)) {
                    out.println(CliSupport.json().writeValueAsString(r));
                }
            }
            out.flush();
            return 0;
        });
    }

    private static boolean isOneObject(String text) {
        try {
            CliSupport.json().readTree(text);
            return true;
        } catch (JacksonException e) {
            return false;
        }
    }
}
