package dev.crucible.image.store;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** One run of {@link ImageStore#prune}; the caller holds the store's lock, so no name changes meanwhile. */
final class StorePruner {
    private static final Duration PARTIAL_AGE = Duration.ofDays(1);

    private final Path dir;
    private final StoreMetadata metadata;
    private final Set<String> keptImages = new HashSet<>();
    private final Set<String> keptIds = new HashSet<>();
    private final Set<String> keptBlobs = new HashSet<>();
    private int images;
    private int roots;
    private int blobs;
    private int partials;
    private int inUse;
    private long bytes;

    StorePruner(Path dir, StoreMetadata metadata) {
        this.dir = dir;
        this.metadata = metadata;
    }

    ImageStore.Pruned prune() throws IOException {
        for (String digest : new HashSet<>(metadata.names().values())) {
            Optional<Image> image = metadata.image(digest);
            keptImages.add(Digests.hex(digest));
            keptBlobs.add(Digests.hex(digest));
            if (image.isPresent()) {
                keptIds.add(Digests.hex(image.get().id()));
                keptBlobs.add(Digests.hex(image.get().id()));
                for (String layer : image.get().layers()) {
                    keptBlobs.add(Digests.hex(layer));
                }
            }
        }
        pruneMetadata();
        pruneRoots();
        pruneBlobs();
        prunePartials();
        return new ImageStore.Pruned(images, roots, blobs, partials, inUse, bytes);
    }

    /** Metadata of unnamed images, and the temp files of a write a crash cut short (writers hold the lock we hold). */
    private void pruneMetadata() throws IOException {
        for (Path file : list(metadata.imagesDir())) {
            String name = file.getFileName().toString();
            if (!name.endsWith(".json") || !keptImages.contains(name.substring(0, name.length() - 5))) {
                bytes += Files.size(file);
                Files.deleteIfExists(file);
                images += name.endsWith(".json") ? 1 : 0;
            }
        }
        for (Path file : list(dir)) {
            String name = file.getFileName().toString();
            if (name.startsWith(".names.json.") && name.endsWith(".tmp")) {
                Files.deleteIfExists(file);
            }
        }
    }

    private void pruneRoots() throws IOException {
        Path rootsDir = dir.resolve("roots");
        for (Path entry : list(rootsDir)) {
            String name = entry.getFileName().toString();
            String idHex = name.endsWith(".lock") ? name.substring(0, name.length() - 5) : name;
            boolean lockFile = name.endsWith(".lock");
            if (!Digests.HEX.matcher(idHex).matches() || keptIds.contains(idHex)
                    || lockFile && (!Files.exists(entry) || Files.exists(rootsDir.resolve(idHex)))) {
                continue; // a root's lock file goes with its root
            }
            Path lock = RootBuilder.lockOf(rootsDir, idHex);
            try (Closeable free = FileLocks.tryExclusive(lock)) {
                if (free == null) {
                    inUse += lockFile ? 0 : 1;
                    continue;
                }
                if (!lockFile) {
                    bytes += StoreFiles.deleteTree(entry);
                    roots++;
                }
                Files.deleteIfExists(lock); // while still held: a lease that waited on it sees it gone and retries
            }
        }
    }

    private void pruneBlobs() throws IOException {
        for (Path file : list(dir.resolve("blobs").resolve("sha256"))) {
            if (!keptBlobs.contains(file.getFileName().toString())) {
                bytes += Files.size(file);
                Files.deleteIfExists(file);
                blobs++;
            }
        }
    }

    private void prunePartials() throws IOException {
        FileTime before = FileTime.from(Instant.now().minus(PARTIAL_AGE));
        for (Path file : list(dir.resolve("partial"))) {
            if (Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS).compareTo(before) < 0) {
                bytes += Files.size(file);
                Files.deleteIfExists(file);
                partials++;
            }
        }
    }

    private static List<Path> list(Path dir) throws IOException {
        List<Path> entries = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
            stream.forEach(entries::add);
        }
        return entries;
    }
}
