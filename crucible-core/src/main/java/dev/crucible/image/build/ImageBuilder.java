package dev.crucible.image.build;

import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.proxy.EgressLimits;
import dev.crucible.egress.proxy.EgressProxy;
import dev.crucible.egress.proxy.EgressResolver;
import dev.crucible.image.layer.RootDiff;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFiles;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.Verdict;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code crucible image build}: a new image made from an image of the store and shell steps, without Docker (as E2B
 * templates are). The base image's layers are unpacked afresh into a private copy of its root; each step runs there
 * as {@code /bin/sh -c STEP} in a sandbox of its own whose {@code /} is that copy, writable, as uid 0 of the
 * sandbox's user namespace (the run's unprivileged host uid; no capability, the usual seccomp filter, cgroups and
 * rlimits), with the image's Env, {@code /workspace} and {@code /tmp} fresh and discarded (so {@code HOME} caches never
 * reach the image); a step that fails ends the build and nothing is committed. Then the changes are one new layer
 * ({@link RootDiff}: whiteouts for deletions, nothing of what a sandbox mounts), stored as a gzip blob, and the image
 * is committed under its tag with the base's config and manifest extended by that layer ({@link BuildCommit}): the
 * store unpacks its root from the layers under the same rules as a pulled image's. The copy is deleted in any case
 * (a killed build's is removed by the next {@link ImageStore#open}). Thread-safe: each build has its own copy.
 */
public final class ImageBuilder {
    private final ImageStore store;
    private final Sandbox sandbox;
    private final Options options;

    /**
     * How each step runs.
     *
     * @param stepLimits one step's limits: its wall clock, CPU time, memory, output per stream, processes
     * @param egress where the steps may connect, through one egress proxy for the whole build (see
     *     {@code dev.crucible.egress}); {@link EgressPolicy#none()}: no network, as in any sandbox
     */
    public record Options(Limits stepLimits, EgressPolicy egress) {
        public Options {
            Objects.requireNonNull(stepLimits, "stepLimits");
            egress = egress == null ? EgressPolicy.none() : egress;
        }

        /** Steps without network. */
        public Options(Limits stepLimits) {
            this(stepLimits, EgressPolicy.none());
        }

        /** 10 minutes (wall and CPU) per step, 2 GiB of memory, 16 MiB of output per stream, 512 processes. */
        public static Options defaults() {
            return new Options(new Limits(600_000, 600_000, 2048, 16 << 20, 512));
        }

        /** These options with the steps' egress to {@code allow}. */
        public Options withEgress(EgressPolicy allow) {
            return new Options(stepLimits, allow);
        }
    }

    /**
     * What to build.
     *
     * @param from a reference to an image of the store (name, digest or id prefix)
     * @param steps shell commands, run in order, each by {@code /bin/sh -c}
     * @param tag the new image's name
     */
    public record Recipe(String from, List<String> steps, String tag) {
        public Recipe {
            Objects.requireNonNull(from, "from");
            Objects.requireNonNull(tag, "tag");
            steps = List.copyOf(steps);
            if (steps.isEmpty()) {
                throw new IllegalArgumentException("an image build needs at least one step");
            }
            for (String step : steps) {
                if (step.isBlank() || step.indexOf('\0') >= 0) {
                    throw new IllegalArgumentException("a step must be a command without NUL, got '" + step + "'");
                }
            }
        }
    }

    /**
     * What to build, as a Dockerfile or an E2B template says it.
     *
     * @param from a reference to an image of the store (name, digest or id prefix)
     * @param steps the steps in order; at least one
     * @param tag the new image's name
     * @param context the directory {@link BuildStep.Copy} sources are read from (hostile: see {@code ContextCopy}),
     *     or null when there is none. With a context, steps run where Docker runs them: in the base image's
     *     {@code WorkingDir}, else in {@code /}; without one (shell steps), in the sandbox's {@code /workspace}
     */
    public record Plan(String from, List<BuildStep> steps, String tag, Path context) {
        public Plan {
            Objects.requireNonNull(from, "from");
            Objects.requireNonNull(tag, "tag");
            steps = List.copyOf(steps);
            if (steps.isEmpty()) {
                throw new IllegalArgumentException("an image build needs at least one step");
            }
        }

        /** The shell steps of {@code recipe}. */
        public static Plan of(Recipe recipe) {
            return new Plan(recipe.from(), recipe.steps().stream().<BuildStep>map(BuildStep.Run::shell).toList(),
                    recipe.tag(), null);
        }
    }

    /** What a build reports as it goes; the output of each step comes as {@link #chunk}s while it runs. */
    public interface Listener extends OutputListener {
        /** Reports nothing. */
        Listener NONE = new Listener() {};

        /** Step {@code number} (from 1) of {@code count} starts. */
        default void stepStarted(int number, int count, String command) {}

        /** Every step succeeded; the layer of {@code entries} entries is being stored and the image committed. */
        default void committing(long entries, long layerBytes) {}

        @Override
        default void chunk(boolean stderr, byte[] bytes, int length) {}
    }

    public ImageBuilder(ImageStore store, Sandbox sandbox, Options options) {
        this.store = store;
        this.sandbox = sandbox;
        this.options = options;
    }

    /**
     * The steps of a steps file: one command per line; blank lines and lines whose first non-blank character is
     * {@code #} are left out.
     */
    public static List<String> stepsOf(String text) {
        return text.lines().map(String::strip).filter(line -> !line.isEmpty() && !line.startsWith("#")).toList();
    }

    /**
     * Builds {@code recipe}, reporting to {@code listener}.
     *
     * @throws ImageException INVALID_REFERENCE (a tag with a digest, or one that does not parse), NOT_FOUND (no such
     *     base image), UNSUPPORTED (a name the steps made that a layer cannot carry), and the failures of
     *     {@link ImageStore#commit}
     * @throws InterruptedException when interrupted; the running step is killed and nothing is committed
     */
    public BuildResult build(Recipe recipe, Listener listener) throws IOException, InterruptedException {
        return build(Plan.of(recipe), listener);
    }

    /**
     * Builds {@code plan}, reporting to {@code listener}: as {@link #build(Recipe, Listener)}, and a
     * {@link BuildStep.Copy} that cannot be done (outside its context, where a sandbox mounts) is an
     * {@link ImageException} INVALID_BUILD; nothing is committed.
     */
    public BuildResult build(Plan recipe, Listener listener) throws IOException, InterruptedException {
        ImageRef tag = ImageRef.parse(recipe.tag());
        if (tag.digest() != null) {
            throw new ImageException(ImageException.Failure.INVALID_REFERENCE, "the tag '" + recipe.tag()
                    + "' has a digest; a built image is named by name[:tag], and gets its digest when committed");
        }
        Image base = store.find(recipe.from()).orElseThrow(() -> ImageStore.notFound(recipe.from()));
        try (Closeable lease = store.lease(base)) {
            Path dir = store.unpackCopy(base);
            try {
                BuildResult result = buildIn(dir, base, tag, recipe, listener);
                StoreFiles.deleteTree(dir);
                return result;
            } catch (IOException | InterruptedException | RuntimeException e) {
                StoreFiles.deleteTreeAfter(dir, e);
                throw e;
            }
        }
    }

    private BuildResult buildIn(Path dir, Image base, ImageRef tag, Plan plan, Listener listener)
            throws IOException, InterruptedException {
        Path root = dir.resolve("root");
        List<BuildStep> steps = plan.steps();
        BuildConfig config = new BuildConfig(base, plan.context() == null ? null : "/");
        try (EgressProxy proxy = options.egress().isNone() ? null : EgressProxy.create(options.egress(),
                EgressResolver.system(), EgressLimits.defaults(), InstantSource.system())) {
            for (int i = 0; i < steps.size(); i++) {
                BuildStep step = steps.get(i);
                listener.stepStarted(i + 1, steps.size(), step.describe());
                if (config.apply(step)) {
                    if (step instanceof BuildStep.Workdir) {
                        ContextCopy.mkdirs(root, config.workdir());
                    }
                    continue;
                }
                if (step instanceof BuildStep.Copy copy) {
                    String to = config.resolve(copy.destination());
                    ContextCopy.copy(plan.context(), copy, copy.destination().endsWith("/") ? to + "/" : to, root);
                    continue;
                }
                BuildStep.Run run = (BuildStep.Run) step;
                // /build is the step's own, not part of the image; one per step, since a finished run gives its
                // directory back to the server's uid in the background
                Path scratch = Files.createDirectory(dir.resolve("build-" + (i + 1)));
                SandboxResult result = sandbox.run(stepSpec(config, root, scratch, run).withEgress(proxy), listener);
                if (result.verdict() != Verdict.OK) {
                    return new BuildResult.StepFailed(i + 1, step.describe(), result);
                }
            }
        }
        Path file = dir.resolve("layer.tar.gz");
        RootDiff.Layer layer = RootDiff.write(base.rootfs(), root, file);
        long bytes = Files.size(file);
        listener.committing(layer.entries(), bytes);
        String blob;
        try (var in = Files.newInputStream(file)) {
            blob = store.putBlob(in);
        }
        Image image = BuildCommit.commit(store, base, tag, BuildCommit.History.of(steps.stream()
                .map(BuildStep::describe).toList()), config, blob, bytes, layer.diffId(), Instant.now());
        return new BuildResult.Built(image, blob, layer.diffId(), bytes, layer.entries(), layer.whiteouts());
    }

    /**
     * A run step's sandbox: its argv, in the working directory when one was set ({@code cd} by {@code /bin/sh}
     * first), with the build's arguments and the image's environment.
     */
    private SandboxSpec stepSpec(BuildConfig config, Path root, Path scratch, BuildStep.Run run) {
        Map<String, String> env = new LinkedHashMap<>(config.runEnv());
        env.put("USER", "root");
        List<String> argv = run.argv();
        if (config.workdir() != null) {
            List<String> wrapped = new ArrayList<>(List.of("/bin/sh", "-c", "cd -- \"$0\" && exec \"$@\"",
                    config.workdir()));
            wrapped.addAll(argv);
            argv = wrapped;
        }
        return new SandboxSpec(argv, env, Map.of(), scratch, true, List.of(), new SandboxRoot.Writable(root), null,
                options.stepLimits());
    }
}
