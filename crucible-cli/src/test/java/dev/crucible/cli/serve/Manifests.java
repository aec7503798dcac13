package dev.crucible.cli.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The real tools over {@code deploy/kubernetes}: {@code kubectl kustomize} renders, {@code deploy/validate} (node and
 * kubernetes-models, installed from its lock file with {@code npm ci} when missing) validates every object against
 * the pinned OpenAPI schema.
 */
final class Manifests {
    static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    static final Path KUSTOMIZE = REPO.resolve("deploy/kubernetes");
    static final Path VALIDATOR = REPO.resolve("deploy/validate");
    static final JsonMapper JSON = JsonMapper.builder().build();

    /** One object as the validator read it, and what it found wrong with it (empty: valid). */
    record Checked(JsonNode object, List<String> errors) {
        String kind() {
            return object.path("kind").asString();
        }

        String name() {
            return object.at("/metadata/name").asString();
        }
    }

    /** The objects of a rendering, checked. */
    record Rendered(List<Checked> objects) {
        Checked one(String kind, String name) {
            List<Checked> found = objects.stream().filter(c -> c.kind().equals(kind) && c.name().equals(name)).toList();
            assertThat(found).as(kind + " " + name).hasSize(1);
            return found.getFirst();
        }

        JsonNode object(String kind, String name) {
            return one(kind, name).object();
        }

        List<Checked> invalid() {
            return objects.stream().filter(Predicate.not(c -> c.errors().isEmpty())).toList();
        }
    }

    private Manifests() {}

    /** Skips the calling test, saying why, when kubectl or npm is missing; installs the validator when needed. */
    static void requireTools() throws Exception {
        for (String tool : List.of("kubectl", "npm", "node")) {
            (tool.equals("kubectl") ? Capability.KUBECTL : Capability.NODE).require(onPath(tool) ? null : tool + " is not on the PATH");
        }
        Path installed = VALIDATOR.resolve("node_modules/.package-lock.json");
        if (!Files.exists(installed)
                || Files.getLastModifiedTime(installed).compareTo(Files.getLastModifiedTime(VALIDATOR.resolve("package-lock.json"))) < 0) {
            Result ci = run(List.of("npm", "ci", "--no-audit", "--no-fund"), VALIDATOR, "");
            assertThat(ci.exit()).as("npm ci in %s: %s", VALIDATOR, ci.err()).isZero();
        }
    }

    /** {@code kubectl kustomize dir}, checked by the validator. */
    static Rendered render(Path dir) throws Exception {
        Result kustomize = run(List.of("kubectl", "kustomize", dir.toString()), REPO, "");
        assertThat(kustomize.exit()).as("kubectl kustomize %s: %s", dir, kustomize.err()).isZero();
        return check(kustomize.out());
    }

    /** Objects in YAML (or JSON, which is YAML), checked by the validator. */
    static Rendered check(String yaml) throws Exception {
        Result node = run(List.of("node", "validate.mjs"), VALIDATOR, yaml);
        assertThat(node.exit()).as("the validator: %s", node.err()).isIn(0, 1); // 1: some object is invalid
        List<Checked> objects = new ArrayList<>();
        for (String line : node.out().lines().toList()) {
            JsonNode result = JSON.readTree(line);
            objects.add(new Checked(result.get("object"),
                    result.get("errors").valueStream().map(JsonNode::asString).toList()));
        }
        assertThat(node.exit() == 1).as("exit 1 exactly when an object is invalid")
                .isEqualTo(objects.stream().anyMatch(c -> !c.errors().isEmpty()));
        return new Rendered(objects);
    }

    private record Result(int exit, String out, String err) {}

    private static Result run(List<String> command, Path dir, String stdin) throws Exception {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).start();
        Executor thread = task -> Thread.ofPlatform().daemon().start(task); // pipes: platform threads
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()), thread);
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()), thread);
        try (var in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish in 5 minutes");
        }
        return new Result(p.exitValue(), out.get(), err.get());
    }

    private static String readAll(InputStream in) {
        try {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static boolean onPath(String tool) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, tool)));
    }
}
