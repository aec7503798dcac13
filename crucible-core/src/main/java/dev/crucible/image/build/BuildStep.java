package dev.crucible.image.build;

import java.util.List;
import java.util.Objects;

/**
 * One step of an image build, as a Dockerfile instruction or an E2B template step says it. Immutable. {@link Run} and
 * {@link Copy} change the root; the others change the image's config (and what later steps see: a {@link Run} gets
 * the {@link Env}s and {@link Arg}s so far and runs in the {@link Workdir}).
 */
public sealed interface BuildStep {

    /** How the step reads in a build's progress and in the image's history. */
    String describe();

    /**
     * A command run as root of the build's user namespace over the root so far.
     *
     * @param argv the program and its arguments ({@code /bin/sh -c TEXT} for a shell command)
     */
    record Run(List<String> argv) implements BuildStep {
        public Run {
            argv = List.copyOf(argv);
            if (argv.isEmpty() || argv.stream().anyMatch(a -> a.indexOf('\0') >= 0) || argv.getFirst().isBlank()) {
                throw new IllegalArgumentException("RUN needs a command without NUL, got " + argv);
            }
        }

        /** {@code /bin/sh -c command}. */
        public static Run shell(String command) {
            if (command.isBlank()) {
                throw new IllegalArgumentException("a step must be a command without NUL, got '" + command + "'");
            }
            return new Run(List.of("/bin/sh", "-c", command));
        }

        @Override
        public String describe() {
            return argv.size() == 3 && argv.get(0).equals("/bin/sh") && argv.get(1).equals("-c") ? argv.get(2)
                    : "RUN " + argv;
        }
    }

    /**
     * Files of the build's context copied into the root (Dockerfile {@code COPY}/{@code ADD} of local files).
     *
     * @param sources paths relative to the context (a last component may hold {@code *} and {@code ?}); a directory's
     *     contents are copied, a link inside one is copied as a link, never followed
     * @param destination an absolute path, or one relative to the working directory; a directory when it ends in
     *     {@code /}, when there are several sources or a directory source, or when it is one already
     * @param mode the permissions every copied file and directory gets, or null to keep the context's
     */
    record Copy(List<String> sources, String destination, Integer mode) implements BuildStep {
        public Copy {
            sources = List.copyOf(sources);
            Objects.requireNonNull(destination, "destination");
            if (sources.isEmpty() || destination.isEmpty()) {
                throw new IllegalArgumentException("COPY needs at least one source and a destination");
            }
        }

        @Override
        public String describe() {
            return "COPY " + String.join(" ", sources) + " " + destination;
        }
    }

    /** An environment variable of the image and of the later steps. */
    record Env(String name, String value) implements BuildStep {
        public Env {
            if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0 || value.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("ENV needs a name without '=' or NUL, got '" + name + "'");
            }
        }

        @Override
        public String describe() {
            return "ENV " + name + "=" + value;
        }
    }

    /** A variable the later {@link Run} steps see and the image does not keep (Dockerfile {@code ARG}). */
    record Arg(String name, String value) implements BuildStep {
        @Override
        public String describe() {
            return "ARG " + name;
        }
    }

    /** The working directory of the later steps and of the image, made when missing. */
    record Workdir(String path) implements BuildStep {
        @Override
        public String describe() {
            return "WORKDIR " + path;
        }
    }

    /** The image's user (its config's {@code User}); steps still run as root of the build's namespace. */
    record User(String user) implements BuildStep {
        @Override
        public String describe() {
            return "USER " + user;
        }
    }

    /** The image's {@code Cmd} (the start command's arguments). */
    record Cmd(List<String> argv) implements BuildStep {
        public Cmd {
            argv = List.copyOf(argv);
        }

        @Override
        public String describe() {
            return "CMD " + argv;
        }
    }

    /** The image's {@code Entrypoint}; as in Docker, it clears a {@code Cmd} the base image had. */
    record Entrypoint(List<String> argv) implements BuildStep {
        public Entrypoint {
            argv = List.copyOf(argv);
        }

        @Override
        public String describe() {
            return "ENTRYPOINT " + argv;
        }
    }

    /** A port the image says it listens on ({@code 8080} or {@code 8080/tcp}): documentation, as in Docker. */
    record Expose(String port) implements BuildStep {
        @Override
        public String describe() {
            return "EXPOSE " + port;
        }
    }

    /** A label of the image's config. */
    record Label(String name, String value) implements BuildStep {
        @Override
        public String describe() {
            return "LABEL " + name + "=" + value;
        }
    }
}
