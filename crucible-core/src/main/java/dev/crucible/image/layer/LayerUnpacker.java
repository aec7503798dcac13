package dev.crucible.image.layer;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Applies an image's layers, lowest first, onto one root directory (the image's flattened rootfs, later bound
 * read-only as a sandbox's {@code /}), treating every layer as hostile input. The unpacker never writes outside the
 * root, whatever a layer holds:
 *
 * <ul>
 *   <li>A blob is gzip, zstd or plain tar, told by its first bytes; bzip2 and xz are {@code UNSUPPORTED}.
 *   <li>Entry names lose leading {@code /} and {@code ./}; a {@code ..} component, or any entry but a directory
 *       naming the root itself, refuses the layer ({@code HOSTILE_LAYER}).
 *   <li>Every entry's parent is resolved below the root by the kernel without following any symlink (one planted by
 *       an earlier entry or layer, absolute or relative, chained or not): a symlink on the way is
 *       {@code HOSTILE_LAYER}. Missing parents are created (0755).
 *   <li>The last component is created with {@code *at} calls on the parent's descriptor, never following a link:
 *       directories merge with directories, anything else there is removed first (recursively, through
 *       descriptors). Symlink targets are stored as text (an absolute one only ever resolves inside the sandbox);
 *       a hard link's target obeys the name rules and must be an existing regular file or symlink of the image.
 *   <li>Whiteouts ({@code .wh.NAME}, {@code .wh..wh..opq}) hide what lower layers wrote, keeping what the same
 *       layer wrote whatever the order of its entries; they are never created.
 *   <li>Devices, FIFOs, sockets and unknown entry types are skipped and counted.
 *   <li>Everything belongs to the unpacking process; only {@code mode & 0755} is kept (no setuid, setgid, sticky or
 *       group/other write bits), no extended attribute is ever set (file capabilities included).
 *   <li>Caps over the whole image: regular-file bytes, entries, name length and the bytes of all entry names
 *       (the unpacker keeps the paths a layer wrote) ({@code TOO_LARGE}), and per layer a decompression ratio (past
 *       1 MiB, more than {@code maxRatio} bytes per compressed byte; a sparse entry's holes count as decompressed)
 *       and a budget for the tar headers before each entry; reading stops the moment a cap is passed. An entry with
 *       more PAX records than a layer needs (global headers pile up) is {@code HOSTILE_LAYER}; a directory is pruned
 *       at most once a layer, however many whiteouts and opaque markers name it.
 * </ul>
 *
 * The caller deletes the root when any call throws. Not thread-safe: one image, one thread.
 */
public final class LayerUnpacker {
    /** The directories a sandbox mounts over in the read-only root. */
    private static final List<String> MOUNT_DIRECTORIES = List.of("proc", "dev", "tmp", "workspace", "build", "etc");
    /** The files in {@code etc} a sandbox binds over. */
    private static final List<String> MOUNT_FILES = List.of("passwd", "group", "hosts");
    /**
     * The paths (below the root) a sandbox mounts over: nothing an image build's sandbox writes there lands in the
     * root, and a layer it makes names none of them. {@code etc} itself is only the mount files' parent.
     */
    static final Set<String> SANDBOX_MOUNTS = Stream.concat(
            MOUNT_DIRECTORIES.stream().filter(dir -> !dir.equals("etc")),
            MOUNT_FILES.stream().map(file -> "etc/" + file)).collect(Collectors.toUnmodifiableSet());
    /** Tar headers read before one entry (PAX records, GNU long names, padding): beyond this, a header is a bomb. */
    private static final long HEADER_BUDGET = 1L << 20;

    /**
     * Caps over the whole image (all layers together).
     *
     * @param maxBytes uncompressed bytes of regular files
     * @param maxEntries tar entries
     * @param maxPathLength bytes of one entry's name (and of a link target)
     * @param maxRatio uncompressed bytes per compressed byte read (a decompression bomb is past it)
     * @param maxNameBytes bytes of all entry names together: the unpacker holds the paths a layer wrote (whiteouts
     *     need them) and every directory's final mode, so without it {@code maxEntries} names of
     *     {@code maxPathLength} bytes (8 GiB by default) would be held in memory
     */
    public record Caps(long maxBytes, long maxEntries, int maxPathLength, int maxRatio, long maxNameBytes) {
        /** What {@link #defaults()} allows for the bytes of all names: ample for the largest real images (~50 MB). */
        public static final long DEFAULT_NAME_BYTES = 256L << 20;

        public Caps {
            if (maxBytes < 0 || maxEntries < 0 || maxPathLength <= 0 || maxRatio <= 0 || maxNameBytes <= 0) {
                throw new IllegalArgumentException("image caps must be positive: " + maxBytes + ", " + maxEntries + ", "
                        + maxPathLength + ", " + maxRatio + ", " + maxNameBytes);
            }
        }

        /** Caps with the default cap on the bytes of all names. */
        public Caps(long maxBytes, long maxEntries, int maxPathLength, int maxRatio) {
            this(maxBytes, maxEntries, maxPathLength, maxRatio, DEFAULT_NAME_BYTES);
        }

        public static Caps defaults() {
            return new Caps(16L << 30, 2_000_000, 4096, 200, DEFAULT_NAME_BYTES);
        }
    }

    private final Path root;
    private final Caps caps;
    /** Final modes of the directories the layers named, applied by {@link #finish()}. */
    private final NavigableMap<String, RootFs.DirMeta> dirModes = new TreeMap<>();
    private long bytes;
    private long nameBytes;
    private long entries;
    private long skipped;
    private int layers;
    private boolean finished;

    private LayerUnpacker(Path root, Caps caps) {
        this.root = root;
        this.caps = caps;
    }

    /** An unpacker onto {@code root}, an empty directory (created if missing) that only this process writes. */
    public static LayerUnpacker into(Path root, Caps caps) throws IOException {
        Files.createDirectories(root);
        return new LayerUnpacker(root, caps);
    }

    /**
     * Applies one layer blob (gzip, zstd or plain tar, told by its first bytes) over the layers applied before it.
     * The blob is read to the end of its decompressed stream (what follows the tar's end is hashed too, under the same
     * caps) and not closed.
     *
     * @param digest names the layer in errors
     * @return the layer's {@code diff_id}: {@code sha256:} of its decompressed bytes, which the caller checks against
     *     the image config's {@code rootfs.diff_ids}
     * @throws ImageException HOSTILE_LAYER, TOO_LARGE or UNSUPPORTED, with a message naming the layer, the entry
     *     and the rule; the root is then half-written and the caller deletes it
     */
    public String apply(InputStream blob, String digest) throws IOException {
        requireUnfinished();
        String diffId;
        try (RootFs fs = RootFs.open(root, dirModes);
                LayerStreams streams = LayerStreams.open(blob, digest, caps.maxRatio())) {
            new TarLayer(this, fs, streams, digest).run();
            try {
                diffId = streams.diffId();
            } catch (ImageException e) {
                throw e;
            } catch (IOException | RuntimeException e) {
                throw new ImageException(Failure.HOSTILE_LAYER, "layer " + digest + " does not read to its end after"
                        + " its tar stream: " + e.getMessage(), e);
            }
        }
        layers++;
        return diffId;
    }

    /**
     * Ends unpacking: makes the mount points a sandbox needs in the read-only root, replacing what the image has at
     * those names unless it already is what is needed (a {@code /tmp} symlink becomes a directory, never followed):
     * the directories {@code proc dev tmp workspace build etc} and the regular files {@code etc/passwd etc/group
     * etc/hosts} (an image's own regular files are kept: the sandbox binds over them). Then gives the directories
     * the layers named their final modes and times, and the root 0755.
     */
    public void finish() throws IOException {
        requireUnfinished();
        finished = true;
        try (RootFs fs = RootFs.open(root, dirModes)) {
            for (String directory : MOUNT_DIRECTORIES) {
                fs.ensureDirectory(directory);
            }
            try (RootFs.Dir etc = fs.directory(List.of("etc"), false)) {
                for (String file : MOUNT_FILES) {
                    fs.ensureFile(etc, file);
                }
            }
            fs.applyDirModes();
            fs.chmodRoot(0755);
        }
    }

    /** Bytes of regular files written so far. */
    public long bytes() {
        return bytes;
    }

    /** Tar entries read so far, skipped ones and whiteouts included. */
    public long entries() {
        return entries;
    }

    /** Entries skipped so far: devices, FIFOs, sockets, unknown types and aufs metadata. */
    public long skipped() {
        return skipped;
    }

    /** Layers applied so far. */
    public int layers() {
        return layers;
    }

    Caps caps() {
        return caps;
    }

    /** Tar header bytes allowed before one entry: PAX records may hold a name and a link target at their cap. */
    long headerBudget() {
        return HEADER_BUDGET + 4L * caps.maxPathLength();
    }

    void countEntry(TarLayer layer) throws ImageException {
        if (++entries > caps.maxEntries()) {
            throw layer.refuse(Failure.TOO_LARGE, "the image has more than " + caps.maxEntries() + " entries");
        }
    }

    /**
     * Counts an entry's name against the cap on the bytes of all names, before anything of the entry is kept.
     */
    void countName(String name, TarLayer layer) throws ImageException {
        nameBytes += name.getBytes(StandardCharsets.UTF_8).length;
        if (nameBytes > caps.maxNameBytes()) {
            throw layer.refuse(Failure.TOO_LARGE, "the image's entry names take more than " + caps.maxNameBytes()
                    + " bytes (the unpacker keeps the paths it writes)");
        }
    }

    void countSkipped() {
        skipped++;
    }

    /** Refuses a file whose declared size would take the image past its byte cap, before any of it is written. */
    void reserveBytes(long size, TarLayer layer) throws ImageException {
        if (size > caps.maxBytes() - bytes) {
            throw layer.refuse(Failure.TOO_LARGE, "a file of " + size + " bytes would take the image's regular files"
                    + " past the cap of " + caps.maxBytes() + " bytes (" + bytes + " written)");
        }
    }

    void addBytes(long n, TarLayer layer) throws ImageException {
        bytes += n;
        if (bytes > caps.maxBytes()) {
            throw layer.refuse(Failure.TOO_LARGE, "the image's regular files pass the cap of " + caps.maxBytes()
                    + " bytes");
        }
    }

    private void requireUnfinished() {
        if (finished) {
            throw new IllegalStateException("the unpacker of " + root + " has finished");
        }
    }
}
