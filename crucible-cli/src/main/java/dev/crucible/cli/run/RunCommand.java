package dev.crucible.cli.run;

import dev.crucible.Crucible;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.error.RequestException;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.LimitsSpec;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code crucible run}: one program in the sandbox; its output, or the {@code /v1/execute} JSON. */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = {"Run one program in the sandbox and print its output.",
            "Without --json, exits with the program's exit code (124 timeout, 137 memory limit,"
                + " 125 output limit, 1 compile error)."})
public final class RunCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE|-", description = "The program; '-' reads it from standard input.")
    String file;

    @Parameters(index = "1..*", paramLabel = "ARG", description = "Arguments passed to the program.")
    List<String> args = List.of();

    @Option(names = {"-l", "--language"}, description = "Language or alias (default: from the file extension).")
    String language;

    @Option(names = "--stdin", paramLabel = "FILE", description = "A file whose content is the program's stdin.")
    Path stdin;

    @Option(names = "--timeout-ms", paramLabel = "N", description = "Wall-clock limit in milliseconds.")
    Long timeoutMs;

    @Option(names = "--memory-mb", paramLabel = "N", description = "Memory limit in MiB.")
    Integer memoryMb;

    @Option(names = "--image", paramLabel = "REF", description = "Run in this image of the store (crucible image pull REF"
            + " first); --language still picks the commands.")
    String image;

    @Option(names = "--isolation", paramLabel = "TIER", description = "Run behind this tier: namespaces or gvisor (at"
            + " least the runtime's own; docs/isolation.md).")
    String isolation;

    @Option(names = "--json", description = "Print the /v1/execute result as JSON and exit 0.")
    boolean json;

    @Option(names = "--runtimes", paramLabel = "FILE",
            description = "A runtimes TOML file adding or replacing runtimes (env CRUCIBLE_RUNTIMES).")
    Path runtimesFile;

    @Override
    public Integer call() {
        var err = spec.commandLine().getErr();
        try {
            String code = readProgram();
            String input = stdin == null ? null : readText(stdin, "stdin file");
            Path runtimes = CliSupport.runtimesFile(runtimesFile);
            try (Crucible crucible = CliSupport.startForOneRun(runtimes)) {
                String lang = language != null ? language : languageFromFile(crucible);
                ExecuteRequest request = new ExecuteRequest(lang, code, input, args, null,
                        new LimitsSpec(timeoutMs, null, memoryMb, null, null), image).withIsolation(isolation);
                ExecuteResult result = crucible.executor().execute(request);
                return report(result);
            }
        } catch (CliSupport.Failure f) {
            return CliSupport.fail(err, f);
        } catch (RequestException e) {
            return CliSupport.fail(err, new CliSupport.Failure(CliSupport.exitCodeOf(e), e.getMessage()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.SANDBOX_ERROR, "interrupted"));
        }
    }

    private String readProgram() {
        if (file.equals("-")) {
            if (language == null) {
                throw new CliSupport.Failure(ExitCodes.UNKNOWN_LANGUAGE, "reading the program from stdin needs --language");
            }
            try {
                return new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read the program from stdin: " + e.getMessage());
            }
        }
        return readText(Path.of(file), "file");
    }

    private static String readText(Path path, String what) {
        try {
            if (Files.isDirectory(path)) {
                throw new CliSupport.Failure(ExitCodes.NO_INPUT, what + " " + path + " is a directory");
            }
            return Files.readString(path, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, "no such " + what + ": " + path);
        } catch (MalformedInputException e) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, what + " " + path + " is not UTF-8 text");
        } catch (IOException e) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read " + what + " " + path + ": " + e.getMessage());
        }
    }

    private String languageFromFile(Crucible crucible) {
        return crucible.runtimes().forFileName(Path.of(file).getFileName().toString())
                .map(LanguageRuntime::language)
                .orElseThrow(() -> new CliSupport.Failure(ExitCodes.UNKNOWN_LANGUAGE,
                        "cannot tell the language of " + file + " from its extension; give --language"));
    }

    private int report(ExecuteResult result) {
        PrintStream out = System.out;
        if (json) {
            out.println(CliSupport.json().writeValueAsString(result));
            out.flush();
            return 0;
        }
        PrintStream err = System.err;
        if (result.compile() != null && !result.compile().ok()) {
            err.print(result.compile().stdout());
            err.print(result.compile().stderr());
        }
        out.print(result.stdout());
        out.flush();
        err.print(result.stderr());
        return switch (result.status()) {
            case OK, RUNTIME_ERROR -> result.exitCode() == null ? 0 : result.exitCode();
            case TIMEOUT -> note(err, "timeout: the program was killed at its time limit", ExitCodes.TIMEOUT);
            case MEMORY_LIMIT -> note(err, "memory_limit: the program passed its memory limit", ExitCodes.MEMORY_LIMIT);
            case OUTPUT_LIMIT -> note(err, "output_limit: the program wrote more than the output cap",
                    ExitCodes.OUTPUT_LIMIT);
            case COMPILE_ERROR -> note(err, "compile_error", ExitCodes.COMPILE_ERROR);
            case SANDBOX_ERROR -> note(err, "sandbox_error: " + result.message(), ExitCodes.SANDBOX_ERROR);
        };
    }

    private static int note(PrintStream err, String line, int code) {
        err.println();
        err.println("crucible: " + line);
        err.flush();
        return code;
    }
}
