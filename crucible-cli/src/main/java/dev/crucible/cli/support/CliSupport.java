package dev.crucible.cli.support;

import dev.crucible.Crucible;
import dev.crucible.error.RequestException;
import dev.crucible.image.Images;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxUnavailableException;
import dev.crucible.server.ServerConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.function.UnaryOperator;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/** What the subcommands share: starting the engine with one-line errors, the JSON mapper, error codes. */
public final class CliSupport {
    private CliSupport() {}

    /** The JSON mapper, built on first use: its classes cost a tenth of a second that `crucible run` does not need. */
    public static JsonMapper json() {
        return Json.MAPPER;
    }

    private static final class Json {
        static final JsonMapper MAPPER = JsonMapper.builder().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS).build();
    }

    /** Thrown to end a command with a message and an exit code. */
    public static final class Failure extends RuntimeException {
        /** The command's exit code, one of {@link ExitCodes}. */
        public final int exitCode;

        public Failure(int exitCode, String message) {
            super(message);
            this.exitCode = exitCode;
        }
    }

    /** What a command does with a started engine: its exit code. */
    public interface EngineCommand {
        int run(Crucible engine) throws Exception;
    }

    /**
     * The engine start-up every command shares: starts the engine (with {@code runtimesFile}), runs {@code command} on
     * it and closes it. A failure to start, a {@link Failure} or a refused request ends the command with one line on
     * {@code err} and its exit code.
     */
    public static int withEngine(PrintWriter err, Path runtimesFile, EngineCommand command) throws Exception {
        return withEngine(err, runtimesFile, () -> images(null, Images.PullPolicy.never()), command);
    }

    /** Where an engine's images come from; opened only when a command starts its engine. */
    public interface ImagesSource {
        Images open();
    }

    /** {@link #withEngine(PrintWriter, Path, EngineCommand)} with the images of {@code images}. */
    public static int withEngine(PrintWriter err, Path runtimesFile, ImagesSource images, EngineCommand command)
            throws Exception {
        return withEngine(err, runtimesFile, images, config -> config, command);
    }

    /** As {@link #withEngine(PrintWriter, Path, ImagesSource, EngineCommand)}, the sandbox settings {@code tuned}. */
    public static int withEngine(PrintWriter err, Path runtimesFile, ImagesSource images,
            UnaryOperator<SandboxConfig> tuned, EngineCommand command) throws Exception {
        Crucible engine;
        try {
            engine = start(tuned.apply(sandboxConfig()), runtimesFile, images.open());
        } catch (Failure f) {
            return fail(err, f);
        }
        try (engine) {
            return command.run(engine);
        } catch (Failure f) {
            return fail(err, f);
        } catch (RequestException e) {
            return fail(err, new Failure(exitCodeOf(e), e.getMessage()));
        }
    }

    /** The engine over the default data directory's images, never pulling; a failure to start is a {@link Failure}. */
    public static Crucible start(Path runtimesFile) {
        return start(runtimesFile, images(null, Images.PullPolicy.never()));
    }

    /** The engine over {@code images}; a failure to start is a {@link Failure} with its exit code. */
    public static Crucible start(Path runtimesFile, Images images) {
        return start(sandboxConfig(), runtimesFile, images);
    }

    /**
     * The engine for a command that runs one program at once: no start-up self-test, since that run fails with the
     * same words when the host cannot build a sandbox; and no zygote, whose start and probe cost more than the one
     * sandbox spawned instead ({@code crucible run hello.py}: 1.57 to 1.33 times {@code --help}, issue 33).
     */
    public static Crucible startForOneRun(Path runtimesFile) {
        return start(sandboxConfig().withSelfTest(false).withZygote(false), runtimesFile,
                images(null, Images.PullPolicy.never()));
    }

    private static Crucible start(SandboxConfig config, Path runtimesFile, Images images) {
        try {
            return Crucible.start(config, runtimesFile, images);
        } catch (SandboxUnavailableException e) {
            throw new Failure(ExitCodes.SANDBOX_UNAVAILABLE, e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new Failure(ExitCodes.NO_INPUT, e.getMessage());
        }
    }

    /** The sandbox settings with what the environment sets; a malformed variable is a usage error. */
    private static SandboxConfig sandboxConfig() {
        try {
            return SandboxConfig.defaults(); // the environment's settings, as an embedded engine's
        } catch (IllegalArgumentException e) {
            throw new Failure(ExitCodes.USAGE, e.getMessage());
        }
    }

    /**
     * The images of the store under {@code dataDir} (null: the default data dir). Without a pull policy the store is
     * opened only once it exists, so that a plain {@code crucible run} creates nothing, and a server started on a fresh
     * data dir finds what {@code crucible image pull} puts there later; a serve with {@code --allow-pull} creates it.
     */
    public static Images images(Path dataDir, Images.PullPolicy pull) {
        Path dir = (dataDir != null ? dataDir : ServerConfig.defaultDataDir(System.getenv())).resolve("images");
        try {
            return Images.at(dir, pull);
        } catch (IOException e) {
            throw new Failure(ExitCodes.NO_INPUT, "cannot open the image store " + dir + ": " + e.getMessage());
        }
    }

    /** The runtimes file given on the command line, else {@code CRUCIBLE_RUNTIMES}, else null (built-ins only). */
    public static Path runtimesFile(Path option) {
        String env = System.getenv("CRUCIBLE_RUNTIMES");
        return option != null ? option : env == null || env.isBlank() ? null : Path.of(env);
    }

    /** The exit code of a refused request: its {@link ExitCodes} constant, else by its HTTP status class. */
    public static int exitCodeOf(RequestException e) {
        return switch (e.code()) {
            case UNKNOWN_LANGUAGE -> ExitCodes.UNKNOWN_LANGUAGE;
            case RUNTIME_UNAVAILABLE, ISOLATION_UNAVAILABLE -> ExitCodes.RUNTIME_UNAVAILABLE;
            case IMAGE_NOT_FOUND -> ExitCodes.IMAGE_NOT_FOUND;
            default -> e.code().httpStatus() >= 500 ? ExitCodes.SANDBOX_ERROR : ExitCodes.INVALID_REQUEST;
        };
    }

    /** Prints {@code f} as one line {@code crucible: …} on {@code err}; returns its exit code. */
    public static int fail(PrintWriter err, Failure f) {
        err.println("crucible: " + f.getMessage());
        err.flush();
        return f.exitCode;
    }
}
