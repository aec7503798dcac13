package dev.crucible.server.e2b.template;

import dev.crucible.image.build.BuildResult;
import dev.crucible.image.build.BuildStep;
import dev.crucible.image.build.ImageBuilder;
import dev.crucible.image.layer.LayerUnpacker;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.store.StoreFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.JsonNode;

/**
 * One E2B build (its {@code TemplateBuildStartV2} body) run as Crucible's image build: {@code fromImage} an image of
 * the store (or {@code fromTemplate} the owner's built template), the steps {@code RUN}, {@code COPY} (from the
 * owner's uploads, unpacked as hostile layers into one context), {@code ENV}, {@code WORKDIR}, {@code USER};
 * {@code startCmd} kept as the image's {@code Cmd}. Its progress and the output of its steps become the build's
 * log; a failure its reason, naming the E2B step (1 = the first step, as the SDK counts). Nothing is named under the
 * template unless every step succeeded.
 */
final class TemplateBuild {
    private TemplateBuild() {}

    /** A build that cannot start as asked: the message says why. */
    static final class Refused extends Exception {
        final String step;

        Refused(String step, String message) {
            super(message);
            this.step = step;
        }
    }

    /** The build's steps, the first a label naming the template (so that a template without steps is an image too). */
    static List<BuildStep> steps(JsonNode body, String templateId) throws Refused {
        List<BuildStep> steps = new ArrayList<>();
        steps.add(new BuildStep.Label("dev.crucible.e2b.template", templateId));
        int n = 0;
        for (JsonNode step : body.path("steps")) {
            n++;
            String type = step.path("type").asString("").toUpperCase(Locale.ROOT);
            List<String> args = new ArrayList<>();
            step.path("args").forEach(a -> args.add(a.asString()));
            try {
                switch (type) {
                    case "RUN" -> steps.add(BuildStep.Run.shell(arg(args, 0, type)));
                    case "COPY" -> {
                        String mode = args.size() > 3 ? args.get(3) : "";
                        steps.add(new BuildStep.Copy(List.of(arg(args, 0, type)), arg(args, 1, type),
                                mode.isEmpty() ? null : Integer.parseInt(mode, 8) & 0777));
                    }
                    case "ENV" -> {
                        for (int i = 0; i + 1 < args.size(); i += 2) {
                            steps.add(new BuildStep.Env(args.get(i), args.get(i + 1)));
                        }
                    }
                    case "WORKDIR" -> steps.add(new BuildStep.Workdir(arg(args, 0, type)));
                    case "USER" -> steps.add(new BuildStep.User(arg(args, 0, type)));
                    default -> throw new IllegalArgumentException("the step type " + type + " is not supported;"
                            + " use RUN, COPY, ENV, WORKDIR or USER");
                }
            } catch (IllegalArgumentException e) {
                throw new Refused(Integer.toString(n), "step " + n + " (" + type + "): " + e.getMessage());
            }
        }
        String start = body.path("startCmd").asString("");
        if (!start.isBlank()) {
            steps.add(new BuildStep.Cmd(List.of("/bin/sh", "-c", start)));
        }
        return steps;
    }

    private static String arg(List<String> args, int i, String type) {
        if (args.size() <= i || args.get(i).isEmpty()) {
            throw new IllegalArgumentException(type + " needs " + (i + 1) + " argument(s)");
        }
        return args.get(i);
    }

    /** Unpacks the uploads the COPY steps name ({@code filesHash}) into {@code context}, as hostile layers. */
    static void unpackUploads(JsonNode body, Uploads uploads, String owner, Path context) throws IOException, Refused {
        LayerUnpacker unpacker = LayerUnpacker.into(context, LayerUnpacker.Caps.defaults());
        int n = 0;
        for (JsonNode step : body.path("steps")) {
            n++;
            if (!step.path("type").asString("").equalsIgnoreCase("COPY")) {
                continue;
            }
            String hash = step.path("filesHash").asString("");
            Path file = uploads.file(owner, hash);
            if (file == null) {
                throw new Refused(Integer.toString(n), "step " + n + " (COPY): its files (hash " + hash + ") were not"
                        + " uploaded");
            }
            try (InputStream in = Files.newInputStream(file)) {
                unpacker.apply(in, "the upload of step " + n);
            } catch (ImageException e) { // ../, a link out, a bomb: the layer rules refuse it, naming the entry
                throw new Refused(Integer.toString(n), "step " + n + " (COPY): its upload was refused: "
                        + e.getMessage());
            }
        }
    }

    /** Runs one build to its end, logging to {@code build}; the image is named only when it succeeded. */
    static void run(ImageBuilder builder, Templates.Template template, Templates.Build build, JsonNode body,
            String from, Uploads uploads, Path scratch, List<String> tags, BuildCache cache) {
        build.status = Templates.Status.BUILDING;
        build.log("info", "Building template " + template.name + " (" + template.id + "), build " + build.id, null);
        Path context = scratch.resolve("context-" + build.id);
        try {
            List<BuildStep> steps = steps(body, template.id);
            String key = cache.key(template.owner, from, body);
            String cached = key == null ? null : cache.image(key);
            if (cached != null) {
                build.image = cached;
                build.status = Templates.Status.READY;
                template.ready(build, tags);
                build.log("info", "CACHED: an identical build of this token made " + cached + "; no step ran (skipCache()"
                        + " builds again)", "finalize");
                return;
            }
            unpackUploads(body, uploads, template.owner, context);
            String tag = "e2b.templates.crucible/" + ownerKey(template.owner) + "/" + template.id + ":" + build.id;
            BuildResult result = builder.build(new ImageBuilder.Plan(from, steps, tag, context), new Listener(build));
            switch (result) {
                case BuildResult.Built built -> {
                    build.image = built.image().name();
                    cache.put(key, build.image);
                    build.status = Templates.Status.READY;
                    template.ready(build, tags);
                    build.log("info", "Build finished: " + built.image().digest(), "finalize");
                }
                case BuildResult.StepFailed failed -> fail(build, Integer.toString(failed.step() - 1), "step "
                        + (failed.step() - 1) + " (" + failed.command() + ") failed with exit code "
                        + failed.exitCode() + " (" + failed.verdict().wireName() + "): " + failed.outputTail());
            }
        } catch (Refused e) {
            fail(build, e.step, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail(build, "finalize", "the server stopped during the build");
        } catch (IOException | RuntimeException e) {
            fail(build, "finalize", e.getMessage() == null ? e.toString() : e.getMessage());
        } finally {
            try {
                if (Files.exists(context)) {
                    StoreFiles.deleteTree(context);
                }
            } catch (IOException e) {
                build.log("warn", "could not remove the build's context: " + e.getMessage(), null);
            }
            build.finished = Instant.now();
        }
    }

    private static void fail(Templates.Build build, String step, String message) {
        build.failure = message;
        build.failedStep = step;
        build.log("error", message, step);
        build.status = Templates.Status.ERROR;
    }

    /** A short, stable key of an owner for image names (lower-case hex). */
    static String ownerKey(String owner) {
        return Integer.toHexString(owner.hashCode() & 0x7fffffff) + Integer.toHexString(owner.length());
    }

    /** Step headers and the steps' output lines into the build's log. */
    private static final class Listener implements ImageBuilder.Listener {
        private final Templates.Build build;
        private final StringBuilder line = new StringBuilder();
        private String step;

        Listener(Templates.Build build) {
            this.build = build;
        }

        @Override
        public void stepStarted(int number, int count, String command) {
            flush();
            step = Integer.toString(number - 1);
            if (number > 1) {
                build.log("info", "[builder " + (number - 1) + "/" + (count - 1) + "] " + command, step);
            }
        }

        @Override
        public synchronized void chunk(boolean stderr, byte[] bytes, int length) {
            line.append(new String(bytes, 0, length, StandardCharsets.UTF_8));
            int nl;
            while ((nl = line.indexOf("\n")) >= 0) {
                build.log("info", line.substring(0, nl), step);
                line.delete(0, nl + 1);
            }
        }

        private synchronized void flush() {
            if (!line.isEmpty()) {
                build.log("info", line.toString(), step);
                line.setLength(0);
            }
        }

        @Override
        public void committing(long entries, long layerBytes) {
            flush();
            build.log("info", "Committing one layer of " + entries + " entries (" + layerBytes + " bytes)", "finalize");
        }
    }
}
