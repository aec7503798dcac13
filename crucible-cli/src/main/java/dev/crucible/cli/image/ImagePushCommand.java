package dev.crucible.cli.image;

import dev.crucible.image.registry.ImagePusher;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code crucible image push REF [DEST]}: sends an image of the store (pulled, imported, built or committed from a
 * session) to a registry, so that other replicas of a cluster can pull what one made; progress to stderr, the
 * pushed reference and digest to stdout.
 */
@Command(name = "push", mixinStandardHelpOptions = true,
        description = {"Push an image of the store to an OCI registry (blobs the repository has are not sent again).",
            "DEST defaults to REF's own name; logins come from CRUCIBLE_REGISTRY_AUTH or ~/.docker/config.json."})
final class ImagePushCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ImageCli.StoreOption store;

    @Parameters(index = "0", paramLabel = "REF", description = "An image of the store: name, digest or id prefix.")
    String reference;

    @Parameters(index = "1", arity = "0..1", paramLabel = "DEST",
            description = "registry/repository[:tag] to push to, e.g. localhost:5000/team/app:1 (default: REF).")
    String destination;

    @Mixin
    ImageCli.RegistryOption registry;

    @Option(names = {"-q", "--quiet"}, description = "No progress; only the reference and digest.")
    boolean quiet;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        return ImageCli.run(err, () -> {
            ImageStore images = store.open();
            Image image = images.find(reference).orElseThrow(() -> ImageStore.notFound(reference));
            ImageRef dest = ImageRef.parse(destination != null ? destination : image.name());
            ImagePusher pusher = new ImagePusher(registry.options(Long.MAX_VALUE));
            ImagePusher.Pushed pushed = pusher.push(image, images, dest, quiet ? ImagePusher.Progress.NONE
                    : (digest, size, sent) -> {
                        err.println((sent ? "sent    " : "present ") + ImageCli.shortHex(digest) + "  "
                                + ImageCli.size(size));
                        err.flush();
                    });
            if (!quiet) {
                err.println("pushed " + pushed.blobsSent() + " blobs (" + ImageCli.size(pushed.bytesSent()) + "), "
                        + pushed.blobsPresent() + " already there");
                err.flush();
            }
            out.println(dest.name() + ":" + (dest.tag() == null ? "latest" : dest.tag()) + "@" + pushed.digest());
            out.flush();
            return 0;
        });
    }
}
