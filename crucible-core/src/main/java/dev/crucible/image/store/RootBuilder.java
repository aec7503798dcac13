package dev.crucible.image.store;

import dev.crucible.image.layer.LayerUnpacker;
import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.ImageException;
import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;

/**
 * Builds the unpacked root of an image id: the layers are applied in {@code staging/<id hex>.<random>/}, which is
 * renamed to {@code roots/<id hex>/} once complete, so a visible root is always whole. A root is shared by every image
 * of its id (the config's digest), so it must hold what the config says: each layer's decompressed bytes must hash to
 * the config's {@code diff_ids} entry, else a manifest pairing a published config with layers of its own would plant
 * the root the genuine image later runs in. The caller holds the id's lease ({@code roots/<id hex>.lock}, shared)
 * while building; {@link #cleanLeftovers} removes only staging dirs whose lease nobody holds, i.e. what a killed
 * process left.
 */
final class RootBuilder {
    private final Path roots;
    private final Path staging;
    private final LayerUnpacker.Caps caps;
    private final Function<String, Path> blobs;

    RootBuilder(Path roots, Path staging, LayerUnpacker.Caps caps, Function<String, Path> blobs) {
        this.roots = roots;
        this.staging = staging;
        this.caps = caps;
        this.blobs = blobs;
    }

    static Path lockOf(Path roots, String idHex) {
        return roots.resolve(idHex + ".lock");
    }

    /**
     * The root of {@code idHex}, unpacked from {@code layers} (digests, lowest first) unless it exists.
     *
     * @param diffIds the config's {@code rootfs.diff_ids}, one per layer
     * @throws ImageException DIGEST_MISMATCH when a layer does not unpack to its diff_id, and the unpacker's failures
     */
    Path build(String idHex, List<String> layers, List<String> diffIds) throws IOException {
        return build(idHex, layers, diffIds, null);
    }

    /**
     * As {@link #build(String, List, List)}; {@code parent}, when not null, is the root of the same layers but the last
     * (their diff_ids checked when it was built): the new root starts as a copy of it, its files hard links (no root
     * is ever written in place: the unpacker replaces a file, never writes into it), and only the last layer is
     * unpacked and checked. Where that copy cannot be made (a server that is not root meets a directory a layer made
     * read-only), every layer is unpacked, as without a parent.
     */
    Path build(String idHex, List<String> layers, List<String> diffIds, Path parent) throws IOException {
        Path root = roots.resolve(idHex);
        if (Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
            return root;
        }
        Path stage = stage(idHex, "");
        try {
            if (!fromParent(parent, stage, layers, diffIds)) {
                unpack(stage, layers, diffIds);
            }
            Files.setPosixFilePermissions(stage, StoreFiles.DIR_OPEN);
            try {
                Files.move(stage, root, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
                    throw e;
                }
                StoreFiles.deleteTree(stage); // another process unpacked the same id first: use its root
            }
            StoreFiles.syncDirectory(roots);
            return root;
        } catch (IOException | RuntimeException | Error e) {
            StoreFiles.deleteTreeAfter(stage, e);
            throw e;
        }
    }

    /** Builds {@code stage} from {@code parent} and the last layer; false (and nothing left) when it cannot. */
    private boolean fromParent(Path parent, Path stage, List<String> layers, List<String> diffIds) throws IOException {
        if (parent == null) {
            return false;
        }
        int last = layers.size() - 1;
        try {
            StoreFiles.linkTree(parent, stage);
            unpack(stage, layers.subList(last, last + 1), diffIds.subList(last, last + 1));
            return true;
        } catch (ImageException e) {
            throw e; // the layer's own fault: unpacking every layer would find it too
        } catch (IOException e) {
            StoreFiles.deleteTree(stage);
            return false;
        }
    }

    /**
     * A new name in staging for work on {@code idHex}'s layers: {@code <id hex>.<purpose><random>}, which
     * {@link #cleanLeftovers} removes once nobody holds the id's lease. Not created here.
     */
    Path stage(String idHex, String purpose) {
        return staging.resolve(idHex + "." + purpose + UUID.randomUUID());
    }

    /**
     * Applies {@code layers} onto {@code stage} (an empty directory, created if missing) and finishes the root.
     *
     * @throws ImageException DIGEST_MISMATCH when a layer does not unpack to its diff_id, and the unpacker's failures
     */
    void unpack(Path stage, List<String> layers, List<String> diffIds) throws IOException {
        LayerUnpacker unpacker = LayerUnpacker.into(stage, caps);
        for (int i = 0; i < layers.size(); i++) {
            String digest = layers.get(i);
            String diffId;
            try (InputStream in = new BufferedInputStream(Files.newInputStream(blobs.apply(digest)), 1 << 16)) {
                diffId = unpacker.apply(in, digest);
            }
            if (!diffId.equals(diffIds.get(i))) {
                throw new ImageException(ImageException.Failure.DIGEST_MISMATCH, "layer " + digest + " unpacks to "
                        + diffId + " but the image config's diff_ids names " + Digests.clip(diffIds.get(i))
                        + " for it: the layer is not the one the config was built from (its root is shared by every"
                        + " image of that config, so it is refused)");
            }
        }
        unpacker.finish();
    }

    /** Deletes the staging dirs of killed unpacks (those whose id lease is free); returns how many. */
    int cleanLeftovers() throws IOException {
        int removed = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(staging)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                int dot = name.indexOf('.');
                String idHex = dot > 0 ? name.substring(0, dot) : "";
                Path lock = lockOf(roots, idHex);
                if (!Digests.HEX.matcher(idHex).matches() || !Files.exists(lock)) {
                    StoreFiles.deleteTree(entry); // every unpack takes its lease before it makes its staging dir
                    removed++;
                    continue;
                }
                try (Closeable free = FileLocks.tryExclusive(lock)) {
                    if (free != null) {
                        StoreFiles.deleteTree(entry);
                        removed++;
                    }
                }
            }
        }
        return removed;
    }
}
