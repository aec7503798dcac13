package dev.crucible.cli.image;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.image.registry.ImagePuller;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageRef;
import java.io.Console;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code crucible image pull REF}: fetches an image (the host's platform) from its registry into the store; progress
 * goes to stderr, the manifest digest to stdout.
 */
@Command(name = "pull", mixinStandardHelpOptions = true,
        description = {"Pull an image from an OCI registry (Docker Hub, ghcr.io, a local registry) into the store.",
            "Logins come from CRUCIBLE_REGISTRY_AUTH or ~/.docker/config.json. Prints the image's digest."})
final class ImagePullCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ImageCli.StoreOption store;

    @Parameters(index = "0", paramLabel = "REF", description = "name[:tag][@sha256:digest], e.g. python:3.12-slim.")
    String reference;

    @Mixin
    ImageCli.RegistryOption registry;

    @Option(names = "--max-bytes", paramLabel = "N", description = "Refuse an image whose compressed blobs pass N bytes.")
    long maxBytes = Long.MAX_VALUE;

    @Option(names = {"-q", "--quiet"}, description = "No progress; only the digest.")
    boolean quiet;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        return ImageCli.run(err, () -> {
            if (maxBytes <= 0) {
                throw new CliSupport.Failure(ExitCodes.USAGE, "--max-bytes must be positive");
            }
            ImageRef ref = ImageRef.parse(reference);
            ImagePuller puller = new ImagePuller(registry.options(maxBytes));
            Console console = System.console();
            ImagePuller.Progress progress = quiet ? ImagePuller.Progress.NONE
                    : new PullProgress(err, console != null && console.isTerminal());
            Image image = puller.pull(ref, store.open(), progress);
            if (!quiet) {
                err.println("pulled " + image.name());
                err.flush();
            }
            out.println(image.digest());
            out.flush();
            return 0;
        });
    }
}
