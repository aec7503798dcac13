package dev.crucible.cli.image;

import dev.crucible.cli.support.ExitCodes;
import dev.crucible.image.archive.ImageImporter;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.ImageStore;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code crucible image …}: the local image store (OCI images without Docker). Failures are one line on stderr and an
 * exit code per cause (see {@link ExitCodes}: 65 invalid reference, 68 not found, 74 store I/O, 75 registry
 * unreachable, 76 digest mismatch, 77 unauthorized, 79 unsupported, 80 hostile layer, 81 too large, 82 a build step
 * failed).
 */
@Command(name = "image", mixinStandardHelpOptions = true,
        description = "Pull, import, build, push, list and remove the OCI images sandboxes can run in.",
        subcommands = {ImagePullCommand.class, ImageCommand.Ls.class, ImageCommand.Inspect.class, ImageCommand.Rm.class,
            ImageCommand.Prune.class, ImageCommand.Import.class, ImageBuildCommand.class, ImagePushCommand.class})
public final class ImageCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** {@code crucible image ls [--json]}. */
    @Command(name = "ls", mixinStandardHelpOptions = true, description = "List the named images.")
    static final class Ls implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ImageCli.StoreOption store;

        @Option(names = "--json", description = "A JSON array of the images, with every field.")
        boolean json;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            return ImageCli.run(spec.commandLine().getErr(), () -> {
                List<Image> images = store.open().list();
                if (json) {
                    out.println(ImageCli.json().writerWithDefaultPrettyPrinter().writeValueAsString(images));
                } else {
                    table(out, images);
                }
                out.flush();
                return 0;
            });
        }

        private static void table(PrintWriter out, List<Image> images) {
            int width = Math.max(4, images.stream().mapToInt(i -> i.name().length()).max().orElse(0));
            String row = "%-" + width + "s  %-12s  %-12s  %9s  %s%n";
            out.printf(row, "NAME", "DIGEST", "ID", "SIZE", "CREATED");
            Instant now = Instant.now();
            for (Image i : images) {
                out.printf(row, i.name(), ImageCli.shortHex(i.digest()), ImageCli.shortHex(i.id()), ImageCli.size(i.size()),
                        ImageCli.age(i.created(), now));
            }
        }
    }

    /** {@code crucible image inspect REF}. */
    @Command(name = "inspect", mixinStandardHelpOptions = true, description = "Show an image as JSON.")
    static final class Inspect implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ImageCli.StoreOption store;

        @Parameters(index = "0", paramLabel = "REF", description = "A name, digest, or id prefix (12+ hex digits).")
        String reference;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            return ImageCli.run(spec.commandLine().getErr(), () -> {
                Image image = store.open().find(reference).orElseThrow(() -> ImageCli.notFound(reference));
                out.println(ImageCli.json().writerWithDefaultPrettyPrinter().writeValueAsString(image));
                out.flush();
                return 0;
            });
        }
    }

    /** {@code crucible image rm REF...}. */
    @Command(name = "rm", mixinStandardHelpOptions = true,
            description = {"Remove names (a digest or id removes every name of that image).",
                "The files stay until `crucible image prune`."})
    static final class Rm implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ImageCli.StoreOption store;

        @Parameters(arity = "1..*", paramLabel = "REF", description = "Names, digests or id prefixes.")
        List<String> references;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            return ImageCli.run(err, () -> {
                ImageStore images = store.open();
                int status = 0;
                for (String reference : references) { // every one is tried; the first failure's code is the exit code
                    int code = ImageCli.run(err, () -> {
                        for (Image removed : images.remove(reference)) {
                            out.println("removed " + removed.name() + " (" + removed.digest() + ")");
                        }
                        return 0;
                    });
                    status = status == 0 ? code : status;
                }
                out.flush();
                return status;
            });
        }
    }

    /** {@code crucible image prune}. */
    @Command(name = "prune", mixinStandardHelpOptions = true,
            description = "Delete the roots, metadata and blobs no name references, and day-old partial downloads.")
    static final class Prune implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ImageCli.StoreOption store;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            return ImageCli.run(spec.commandLine().getErr(), () -> {
                ImageStore.Pruned p = store.open().prune();
                out.printf("removed %d images, %d roots, %d blobs, %d partial downloads; freed %s%n", p.images(),
                        p.roots(), p.blobs(), p.partials(), ImageCli.size(p.bytesFreed()));
                if (p.rootsInUse() > 0) {
                    out.printf("kept %d unreferenced roots that a server is using; prune again once it stops%n",
                            p.rootsInUse());
                }
                out.flush();
                return 0;
            });
        }
    }

    /** {@code crucible image import FILE [--tag NAME]}. */
    @Command(name = "import", mixinStandardHelpOptions = true,
            description = {"Import a `docker save` archive, or an OCI image layout (directory or tar), for hosts"
                + " without a registry.", "Names come from the archive (RepoTags; an OCI layout's full reference name"
                + " annotation); a layout that names its image by a bare tag (e.g. 3.12) needs --tag."})
    static final class Import implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ImageCli.StoreOption store;

        @Parameters(index = "0", paramLabel = "FILE", description = "The archive (.tar, .tar.gz) or layout directory.")
        Path file;

        @Option(names = "--tag", paramLabel = "NAME", description = "The name to give the image (the archive must hold one).")
        String tag;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            return ImageCli.run(spec.commandLine().getErr(), () -> {
                for (Image image : new ImageImporter(store.open()).importFrom(file, tag)) {
                    out.println("imported " + image.name() + " (" + image.digest() + ")");
                }
                out.flush();
                return 0;
            });
        }
    }
}
