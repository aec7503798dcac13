package dev.crucible.image.registry;

import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.nio.file.Path;

/**
 * A pull in a process of its own, for the test that kills one with SIGKILL mid-blob: {@code PullProcess REF STORE}
 * fetches REF (plain HTTP to a loopback registry, no logins) into the store at STORE.
 */
final class PullProcess {
    private PullProcess() {}

    public static void main(String[] args) throws Exception {
        ImagePuller puller = PullFixtures.puller();
        puller.fetch(ImageRef.parse(args[0]), ImageStore.open(Path.of(args[1])), ImagePuller.Progress.NONE);
    }
}
