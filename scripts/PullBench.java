import dev.crucible.image.registry.ImagePuller;
import dev.crucible.image.registry.RegistryCredentials;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

/**
 * Pulls one image ROUNDS times in one JVM, each into a fresh store, and prints each pull's download phase (until the
 * layers start unpacking) and whole time: what a running server's --allow-pull pull costs once the JVM is warm.
 * Used by scripts/bench-image.sh: java -cp crucible.jar scripts/PullBench.java REF DIR ROUNDS
 */
public class PullBench {
    public static void main(String[] args) throws Exception {
        ImageRef ref = ImageRef.parse(args[0]);
        Path dir = Path.of(args[1]);
        int rounds = Integer.parseInt(args[2]);
        ImagePuller puller = new ImagePuller(new ImagePuller.Options(Set.of(), Long.MAX_VALUE, Duration.ofSeconds(60),
                RegistryCredentials.none()));
        for (int r = 0; r < rounds; r++) {
            Path store = Files.createTempDirectory(dir, "store");
            long[] unpacking = {0};
            long start = System.nanoTime();
            puller.pull(ref, ImageStore.open(store), new ImagePuller.Progress() {
                @Override
                public void unpacking(int layers) {
                    unpacking[0] = System.nanoTime();
                }
            });
            long end = System.nanoTime();
            System.out.printf("warm pull %d: download + verify %d ms, whole %d ms%n", r + 1,
                    (unpacking[0] - start) / 1_000_000, (end - start) / 1_000_000);
        }
    }
}
