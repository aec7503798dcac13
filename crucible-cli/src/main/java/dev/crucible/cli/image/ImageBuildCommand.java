package dev.crucible.cli.image;

import dev.crucible.Crucible;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.image.Images;
import dev.crucible.image.build.BuildResult;
import dev.crucible.image.build.Dockerfile;
import dev.crucible.image.build.ImageBuilder;
import dev.crucible.image.store.ImageStore;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Verdict;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code crucible image build --from IMAGE --run CMD… [--file STEPS] --tag NAME}, or {@code crucible image build -f
 * Dockerfile [CONTEXT] -t NAME}: a new image from an image of the store and shell steps, or a Dockerfile's
 * instructions ({@link Dockerfile}, {@link ImageBuilder}). Each step's output goes to stderr as it runs, the new image's digest
 * to stdout; a step that fails is exit 82 (nothing committed), the other failures are the image command's.
 */
@Command(name = "build", mixinStandardHelpOptions = true,
        description = {"Build an image from an image of the store and shell steps, without Docker.",
            "Each step runs as /bin/sh -c CMD in a sandbox over a private, writable copy of the image's root, as root"
                + " of the sandbox's user namespace (no host privilege, no network); /tmp, /workspace (the working"
                + " directory and HOME) and /build are fresh per step and not kept. A step that fails stops the build"
                + " and nothing is committed. Then every change becomes one new layer (deletions as whiteouts) of a"
                + " new image named --tag, unpacked by the same rules as a pulled one.",
            "A steps file (--file) has one command per line; blank lines and lines starting with # are ignored. Its"
                + " steps run first, then the --run steps in the order given.",
            "With -f Dockerfile: FROM (an image of the store), RUN (shell, exec and heredoc forms), COPY/ADD of files"
                + " of CONTEXT (default: the Dockerfile's directory; --chmod kept, --chown ignored), ENV, ARG"
                + " (--build-arg), WORKDIR, USER, CMD, ENTRYPOINT, EXPOSE, LABEL. Anything else is refused naming"
                + " its line (docs/images.md).",
            "Step output goes to stderr as it runs; the new image's digest to stdout."})
final class ImageBuildCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ImageCli.StoreOption store;

    @Option(names = "--from", paramLabel = "IMAGE",
            description = "The base image: a name, digest or id prefix of the store (crucible image pull it first).")
    String from;

    @Option(names = {"-f", "--dockerfile"}, paramLabel = "DOCKERFILE", description = "Build this Dockerfile (its FROM"
            + " is the base image; no --from, --run or --file).")
    Path dockerfile;

    @Parameters(arity = "0..1", paramLabel = "CONTEXT", description = "With -f: the directory COPY reads from"
            + " (default: the Dockerfile's directory).")
    Path context;

    @Option(names = "--build-arg", paramLabel = "NAME=VALUE", description = "A Dockerfile ARG's value; repeatable.")
    Map<String, String> buildArgs = new LinkedHashMap<>();

    @Option(names = "--run", paramLabel = "CMD", description = "A step: a shell command; repeatable, run in order.")
    List<String> runs = new ArrayList<>();

    @Option(names = "--file", paramLabel = "STEPS", description = "A file of steps, one command a line (# comments).")
    Path file;

    @Option(names = {"-t", "--tag"}, required = true, paramLabel = "NAME", description = "The new image's name, e.g. app:1.")
    String tag;

    @Option(names = "--step-timeout-s", paramLabel = "N", description = "Wall-clock (and CPU) limit of one step in"
            + " seconds (default: ${DEFAULT-VALUE}).")
    long stepTimeoutSeconds = ImageBuilder.Options.defaults().stepLimits().timeoutMs() / 1000;

    @Option(names = "--step-memory-mb", paramLabel = "N", description = "Memory limit of one step in MiB (default:"
            + " ${DEFAULT-VALUE}).")
    int stepMemoryMb = ImageBuilder.Options.defaults().stepLimits().memoryMb();

    @Option(names = "--egress-allow", paramLabel = "HOST[:PORT],...", description = "Where the steps may connect,"
            + " through Crucible's egress proxy (pypi.org, *.pythonhosted.org, 10.0.0.5:3141; no port means 443)."
            + " Default none: steps have no network. Needs root. The built image runs without network.")
    String egressAllow;

    @Option(names = {"-q", "--quiet"}, description = "No step output; only the digest (a failed step's output tail"
            + " goes to stderr).")
    boolean quiet;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        return ImageCli.run(err, () -> {
            ImageBuilder.Plan recipe = plan();
            ImageStore images = store.open();
            try (Crucible engine = CliSupport.start(null, Images.of(images, Images.PullPolicy.never()))) {
                ImageBuilder builder = new ImageBuilder(images, engine.sandbox(), options(engine));
                BuildResult result = builder.build(recipe, quiet ? ImageBuilder.Listener.NONE : new Progress(err));
                return switch (result) {
                    case BuildResult.Built built -> {
                        if (!quiet) {
                            err.printf("built %s (layer %s, %d deletions)%n", built.image().name(),
                                    built.layer(), built.whiteouts());
                            err.flush();
                        }
                        out.println(built.image().digest());
                        out.flush();
                        yield 0;
                    }
                    case BuildResult.StepFailed failed -> throw failure(failed, recipe.steps().size());
                };
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("the build was interrupted; nothing was committed");
            }
        });
    }

    /** The step limits and egress; a list this host cannot give (not root) is a usage error before anything runs. */
    private ImageBuilder.Options options(Crucible engine) {
        EgressPolicy egress;
        try {
            egress = egressAllow == null ? EgressPolicy.none() : EgressPolicy.parse(egressAllow);
        } catch (IllegalArgumentException e) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "--egress-allow: " + e.getMessage());
        }
        if (!egress.isNone() && engine.sandbox().egressUnavailable() != null) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "--egress-allow: " + engine.sandbox().egressUnavailable());
        }
        return new ImageBuilder.Options(limits(), egress);
    }

    /** The Dockerfile's plan, or the shell steps' over --from; a mix, or neither, is a usage error. */
    private ImageBuilder.Plan plan() throws IOException {
        if (dockerfile == null) {
            if (from == null || context != null || !buildArgs.isEmpty()) {
                throw new CliSupport.Failure(ExitCodes.USAGE, "give --from IMAGE with --run/--file steps, or -f"
                        + " Dockerfile [CONTEXT] (CONTEXT and --build-arg go with -f)");
            }
            return ImageBuilder.Plan.of(new ImageBuilder.Recipe(from, steps(), tag));
        }
        if (from != null || file != null || !runs.isEmpty()) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "-f Dockerfile takes its base image from FROM and its steps"
                    + " from its lines: leave out --from, --run and --file");
        }
        if (!Files.isRegularFile(dockerfile) || !Files.isReadable(dockerfile)) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read the Dockerfile " + dockerfile);
        }
        Path dir = context != null ? context : dockerfile.toAbsolutePath().getParent();
        if (!Files.isDirectory(dir)) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, "the build context " + dir + " is not a directory");
        }
        try {
            Dockerfile.Parsed parsed = Dockerfile.parse(Files.readString(dockerfile), buildArgs);
            return new ImageBuilder.Plan(parsed.from(), parsed.steps(), tag, dir);
        } catch (Dockerfile.Invalid e) {
            throw new CliSupport.Failure(ExitCodes.INVALID_REQUEST, dockerfile + ": " + e.getMessage());
        }
    }

    /** The steps file's steps, then the --run steps; none at all is a usage error. */
    private List<String> steps() throws IOException {
        List<String> steps = new ArrayList<>();
        if (file != null) {
            if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
                throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read the steps file " + file);
            }
            steps.addAll(ImageBuilder.stepsOf(Files.readString(file)));
        }
        for (String run : runs) {
            if (run.isBlank() || run.indexOf('\0') >= 0) {
                throw new CliSupport.Failure(ExitCodes.USAGE, "--run needs a command");
            }
            steps.add(run);
        }
        if (steps.isEmpty()) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "no steps: give --run CMD (repeatable) or --file STEPS");
        }
        return steps;
    }

    private Limits limits() {
        if (stepTimeoutSeconds < 1 || stepTimeoutSeconds > 24 * 3600 || stepMemoryMb < 64 || stepMemoryMb > 65536) {
            throw new CliSupport.Failure(ExitCodes.INVALID_REQUEST, "--step-timeout-s must be 1 to 86400 and"
                    + " --step-memory-mb 64 to 65536");
        }
        Limits d = ImageBuilder.Options.defaults().stepLimits();
        return new Limits(stepTimeoutSeconds * 1000, stepTimeoutSeconds * 1000, stepMemoryMb, d.outputBytes(), d.pids());
    }

    /** A failed step in one line: which, and why; the sandbox's own failure is exit 70, the step's exit 82. */
    private CliSupport.Failure failure(BuildResult.StepFailed failed, int count) {
        PrintWriter err = spec.commandLine().getErr();
        if (quiet && !failed.outputTail().isEmpty()) {
            err.println(failed.outputTail());
        }
        String step = "step " + failed.step() + "/" + count + " (" + failed.command() + ")";
        String why = switch (failed.verdict()) {
            case TIMEOUT -> "ran past its time limit (" + stepTimeoutSeconds + " s; --step-timeout-s)";
            case MEMORY_LIMIT -> "ran out of memory (" + stepMemoryMb + " MiB; --step-memory-mb)";
            case OUTPUT_LIMIT -> "wrote more output than a step may (16 MiB a stream)";
            case SANDBOX_ERROR -> "could not run: " + failed.result().sandboxError();
            default -> failed.result().signal() != null ? "was killed by signal " + failed.result().signal()
                    : "failed with exit code " + failed.exitCode();
        };
        int code = failed.verdict() == Verdict.SANDBOX_ERROR ? ExitCodes.SANDBOX_ERROR
                : ExitCodes.BUILD_STEP_FAILED;
        return new CliSupport.Failure(code, step + " " + why + "; nothing was committed");
    }

    /** Step headers on stderr, and each step's output as it comes, byte for byte. */
    private static final class Progress implements ImageBuilder.Listener {
        private final PrintWriter err;
        private final PrintStream raw = System.err;

        Progress(PrintWriter err) {
            this.err = err;
        }

        @Override
        public void stepStarted(int number, int count, String command) {
            err.printf("step %d/%d: %s%n", number, count, command);
            err.flush();
        }

        @Override
        public void chunk(boolean stderr, byte[] bytes, int length) {
            synchronized (raw) {
                raw.write(bytes, 0, length);
                raw.flush();
            }
        }

        @Override
        public void committing(long entries, long layerBytes) {
            err.printf("committing one layer of %d entries (%s)%n", entries, ImageCli.size(layerBytes));
            err.flush();
        }
    }
}
