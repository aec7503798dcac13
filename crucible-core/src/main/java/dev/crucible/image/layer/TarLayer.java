package dev.crucible.image.layer;

import dev.crucible.image.layer.RootFs.Dir;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * One layer's tar stream applied onto the root, entry by entry, as hostile input: names are checked (no {@code ..},
 * nothing but a directory may name the root), every parent is resolved without following a symlink, whiteouts hide
 * what lower layers wrote (an opaque directory keeps what this layer wrote, whatever the order of the tar; each
 * directory is pruned at most once a layer), devices, FIFOs, sockets and unknown types are skipped, and only
 * {@code mode & 0755} is kept. An entry may carry at most {@value #MAX_PAX_RECORDS} PAX records of its own and from
 * global headers (the tar reader keeps global ones for the rest of the layer and copies them into every entry), and
 * a sparse entry's holes count against the ratio cap as they are read. Each refusal names the layer, the entry and
 * the rule.
 */
final class TarLayer {
    static final String WHITEOUT = ".wh.";
    static final String OPAQUE = ".wh..wh..opq";
    private static final int NAME_MAX = 255;
    private static final int SOCKET = 0140000;
    private static final int KEPT_MODE = 0755;
    /** PAX records (other than those the tar reader applies itself: path, size, times...) one entry may carry. */
    static final int MAX_PAX_RECORDS = 128;
    /**
     * Bytes asked of a sparse entry in one read: the tar reader recurses once per chunk of the sparse map a read
     * spans, and a map of one-byte chunks read into a large buffer overflows the thread's stack.
     */
    private static final int SPARSE_READ = 512;

    private enum Type { DIRECTORY, FILE, SYMLINK, HARDLINK, SKIPPED }

    private final LayerUnpacker owner;
    private final RootFs fs;
    private final LayerStreams streams;
    private final TarArchiveInputStream tar;
    private final String digest;
    /** Every path this layer wrote, and every directory above one: what an opaque directory or a whiteout keeps. */
    private final Set<String> touched = new HashSet<>();
    /**
     * Directories this layer pruned to what it wrote: nothing of a lower layer is left below them, and everything
     * written below them since is this layer's, so a later opaque marker or whiteout there has nothing to do.
     */
    private final Set<String> pruned = new HashSet<>();
    /** Entries' data pass through here, one entry at a time. */
    private final byte[] buffer = new byte[1 << 16];
    private String entry = "";

    TarLayer(LayerUnpacker owner, RootFs fs, LayerStreams streams, String digest) {
        this.owner = owner;
        this.fs = fs;
        this.streams = streams;
        this.digest = digest;
        this.tar = new TarArchiveInputStream(streams, StandardCharsets.UTF_8.name());
    }

    /** Applies every entry, reading each entry's headers under a budget and its data through to the end. */
    void run() throws IOException {
        TarArchiveEntry next;
        while ((next = next()) != null) {
            entry = shown(next.getName());
            streams.reading(entry);
            owner.countEntry(this);
            owner.countName(next.getName(), this);
            checkPaxRecords(next);
            try {
                apply(next);
            } catch (RootFs.Refused e) {
                throw refuse(Failure.HOSTILE_LAYER, e.getMessage());
            } catch (ErrnoException e) {
                if (e.errno() == Linux.ENAMETOOLONG) {
                    throw refuse(Failure.HOSTILE_LAYER, "a path is longer than the kernel allows ("
                            + e.getMessage() + ")");
                }
                throw new IOException(where() + ": " + e.getMessage(), e);
            }
            drain();
        }
    }

    /**
     * The next entry, its headers read under the budget. The tar reader follows a chain of PAX, global or long-name
     * headers by recursing once a header, so the budget's 2000 or so headers may overflow a small stack: that is a
     * refusal of the layer, not an Error out of the unpacker.
     */
    private TarArchiveEntry next() throws IOException {
        streams.window(owner.headerBudget());
        try {
            return tar.getNextEntry();
        } catch (IOException | RuntimeException e) {
            throw unreadable(e);
        } catch (StackOverflowError e) {
            throw nestedTooDeep();
        } finally {
            streams.unbounded();
        }
    }

    private ImageException nestedTooDeep() {
        return new ImageException(Failure.HOSTILE_LAYER, "layer " + digest + " refused: its tar headers or sparse map"
                + " (at or after entry '" + entry + "') nest deeper than the tar reader can follow on this thread's"
                + " stack");
    }

    /**
     * Refuses an entry with more PAX records than any layer needs: global headers pile up in the tar reader, which
     * copies them into every later entry, so a few MiB of them would hold the heap and cost every entry a copy.
     */
    private void checkPaxRecords(TarArchiveEntry e) throws ImageException {
        int records = e.getExtraPaxHeaders().size();
        long bytes = 0;
        for (var record : e.getExtraPaxHeaders().entrySet()) {
            bytes += record.getKey().length() + record.getValue().length();
        }
        if (records > MAX_PAX_RECORDS || bytes > owner.headerBudget()) {
            throw refuse(Failure.HOSTILE_LAYER, "the entry carries " + records + " PAX records of " + bytes
                    + " characters (its own and the layer's global headers, which stay for every later entry); a"
                    + " layer needs at most " + MAX_PAX_RECORDS + " records within " + owner.headerBudget());
        }
    }

    /** Reads what is left of the entry's data (a skipped entry's), so the ratio cap still sees it. */
    private void drain() throws IOException {
        while (readData() >= 0) {
            // counted by readData
        }
    }

    /**
     * Reads the entry's data. A sparse entry's holes are zeros the tar reader makes up, not bytes of the stream:
     * they are counted as decompressed bytes, so the ratio cap stops a sparse entry (of any type: the holes of a
     * symlink's data are read through too) that stands for far more than the layer carries. A sparse entry is read
     * {@value #SPARSE_READ} bytes at a time (see there).
     */
    private int readData() throws IOException {
        long before = streams.decompressedBytes();
        int n;
        try {
            TarArchiveEntry current = tar.getCurrentEntry();
            n = tar.read(buffer, 0, current != null && current.isSparse() ? SPARSE_READ : buffer.length);
        } catch (IOException | RuntimeException e) {
            throw unreadable(e);
        } catch (StackOverflowError e) {
            throw nestedTooDeep();
        }
        if (n > 0) {
            streams.expanded(n - (streams.decompressedBytes() - before));
        }
        return n;
    }

    private void apply(TarArchiveEntry e) throws IOException {
        Type type = typeOf(e);
        List<String> parts = names(e.getName(), "name");
        if (parts.isEmpty()) {
            if (type != Type.DIRECTORY) {
                throw refuse(Failure.HOSTILE_LAYER, "only a directory entry may name the image root itself");
            }
            return; // the root's own entry: the root stays the unpacker's
        }
        String last = parts.getLast();
        for (String part : parts.subList(0, parts.size() - 1)) {
            if (part.startsWith(WHITEOUT)) {
                throw refuse(Failure.HOSTILE_LAYER, "a whiteout name ('" + shown(part) + "') is used as a directory");
            }
        }
        if (last.startsWith(WHITEOUT)) {
            whiteout(parts);
            return;
        }
        switch (type) {
            case DIRECTORY -> directory(parts, e);
            case FILE -> file(parts, e);
            case SYMLINK -> symlink(parts, e);
            case HARDLINK -> hardlink(parts, e);
            case SKIPPED -> owner.countSkipped();
        }
    }

    /** Devices, FIFOs, sockets (a file entry whose mode says socket) and types no OCI layer uses are skipped. */
    private static Type typeOf(TarArchiveEntry e) {
        return switch (e.getLinkFlag()) {
            case TarConstants.LF_DIR, 'D' -> Type.DIRECTORY;
            case TarConstants.LF_SYMLINK -> Type.SYMLINK;
            case TarConstants.LF_LINK -> Type.HARDLINK;
            case TarConstants.LF_NORMAL, TarConstants.LF_OLDNORM, TarConstants.LF_CONTIG,
                    TarConstants.LF_GNUTYPE_SPARSE -> (e.getMode() & Linux.S_IFMT) == SOCKET ? Type.SKIPPED
                            : e.getName().endsWith("/") ? Type.DIRECTORY : Type.FILE;
            default -> Type.SKIPPED;
        };
    }

    private void directory(List<String> parts, TarArchiveEntry e) throws IOException {
        try (Dir parent = fs.directory(parentOf(parts), true)) {
            fs.mkdir(parent, parts.getLast(), e.getMode() & KEPT_MODE, e.getLastModifiedTime());
        }
        touch(parts);
    }

    private void file(List<String> parts, TarArchiveEntry e) throws IOException {
        owner.reserveBytes(e.isSparse() ? e.getRealSize() : e.getSize(), this);
        try (Dir parent = fs.directory(parentOf(parts), true)) {
            fs.writeFile(parent, parts.getLast(), e.getMode() & KEPT_MODE, e.getLastModifiedTime(), this::copy);
        }
        touch(parts);
    }

    /** Copies the entry's data, counting every byte against the image's cap as it goes. */
    private void copy(OutputStream out) throws IOException {
        for (int n; (n = readData()) >= 0; ) {
            owner.addBytes(n, this);
            out.write(buffer, 0, n);
        }
    }

    private void symlink(List<String> parts, TarArchiveEntry e) throws IOException {
        String target = e.getLinkName();
        if (target.isEmpty() || target.indexOf('\0') >= 0) {
            throw refuse(Failure.HOSTILE_LAYER, "a symlink's target must be non-empty text without NUL bytes");
        }
        capLength(target, "symlink target");
        try (Dir parent = fs.directory(parentOf(parts), true)) {
            fs.symlink(parent, parts.getLast(), target);
        }
        touch(parts);
    }

    /** A hard link's target goes through the same name rules and is resolved below the root without symlinks. */
    private void hardlink(List<String> parts, TarArchiveEntry e) throws IOException {
        List<String> target = names(e.getLinkName(), "hard link target");
        if (target.isEmpty() || target.equals(parts)) {
            throw refuse(Failure.HOSTILE_LAYER, "a hard link must name a file other than itself and the image root");
        }
        try (Dir from = fs.directory(parentOf(target), false)) {
            if (from == null) {
                throw refuse(Failure.HOSTILE_LAYER, "the hard link's target '" + shown(e.getLinkName())
                        + "' does not exist in the image");
            }
            try (Dir parent = fs.directory(parentOf(parts), true)) {
                fs.hardlink(from, target.getLast(), parent, parts.getLast());
            }
        }
        touch(parts);
    }

    /**
     * {@code .wh.NAME} hides NAME of the lower layers (recursively, never following a link; a missing NAME is
     * fine); what this layer wrote there stays. {@code .wh..wh..opq} hides everything the lower layers put in its
     * directory. Other {@code .wh..wh.} names are aufs metadata, skipped. Whiteouts are never created.
     */
    private void whiteout(List<String> parts) throws IOException {
        String last = parts.getLast();
        List<String> parent = parentOf(parts);
        if (last.equals(OPAQUE)) {
            prune(String.join("/", parent));
            return;
        }
        if (last.startsWith(WHITEOUT + WHITEOUT)) {
            owner.countSkipped();
            return;
        }
        String name = last.substring(WHITEOUT.length());
        if (name.isEmpty() || name.equals(".") || name.equals("..")) {
            throw refuse(Failure.HOSTILE_LAYER, "a whiteout must name an entry of its own directory, not '" + name
                    + "'");
        }
        try (Dir dir = fs.directory(parent, false)) {
            if (dir == null) {
                return;
            }
            String path = dir.child(name);
            if (!touched.contains(path)) {
                fs.remove(dir, name);
            } else if (RootFs.kind(dir.fd, name) == RootFs.Kind.DIRECTORY) {
                prune(path);
            }
        }
    }

    /**
     * Removes what lower layers left below the directory {@code path}, once a layer: a directory pruned already, or
     * below one, holds only this layer's entries, and a pruned directory met again below {@code path} is not walked
     * again. So a layer of n markers over n entries costs one walk, not n.
     */
    private void prune(String path) throws IOException {
        for (String above = path; ; above = above.substring(0, Math.max(0, above.lastIndexOf('/')))) {
            if (pruned.contains(above)) {
                return;
            }
            if (above.isEmpty()) {
                break;
            }
        }
        fs.prune(path, touched::contains, pruned::contains);
        pruned.add(path);
    }

    /**
     * The components of an entry's name or link target: leading {@code /} and {@code ./}, empty and {@code .}
     * components dropped; {@code ..}, NUL bytes, components over 255 bytes and names over the cap refused.
     */
    private List<String> names(String name, String what) throws ImageException {
        if (name.indexOf('\0') >= 0) {
            throw refuse(Failure.HOSTILE_LAYER, "the " + what + " holds a NUL byte");
        }
        capLength(name, what);
        List<String> parts = new ArrayList<>();
        for (String part : name.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                throw refuse(Failure.HOSTILE_LAYER, "the " + what + " has a '..' component, which could leave the"
                        + " image root");
            }
            if (utf8Length(part) > NAME_MAX) {
                throw refuse(Failure.HOSTILE_LAYER, "the " + what + " has a component longer than " + NAME_MAX
                        + " bytes");
            }
            parts.add(part);
        }
        return parts;
    }

    private void capLength(String text, String what) throws ImageException {
        int length = utf8Length(text);
        if (length > owner.caps().maxPathLength()) {
            throw refuse(Failure.TOO_LARGE, "the " + what + " is " + length + " bytes long, past the cap of "
                    + owner.caps().maxPathLength());
        }
    }

    /** Records a path this layer wrote and the directories above it. */
    private void touch(List<String> parts) {
        String path = String.join("/", parts);
        while (touched.add(path)) {
            int slash = path.lastIndexOf('/');
            if (slash < 0) {
                return;
            }
            path = path.substring(0, slash);
        }
    }

    private static List<String> parentOf(List<String> parts) {
        return parts.subList(0, parts.size() - 1);
    }

    private static int utf8Length(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }

    /**
     * A tar or decompression error (the tar reader may throw unchecked exceptions on a malformed header); a cap the
     * counting stream passed wins over the tar reader's wrapping of it.
     */
    private ImageException unreadable(Exception e) {
        if (streams.tripped() != null) {
            return streams.tripped();
        }
        if (e instanceof ImageException image) {
            return image;
        }
        return new ImageException(Failure.HOSTILE_LAYER, "layer " + digest + " is not a readable tar stream (at or"
                + " after entry '" + entry + "'): " + e.getMessage(), e);
    }

    ImageException refuse(Failure failure, String rule) {
        return new ImageException(failure, where() + " refused: " + rule);
    }

    private String where() {
        return "layer " + digest + ", entry '" + entry + "'";
    }

    /** A name as shown in a message: control characters escaped, cut after 200 characters. */
    private static String shown(String name) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        for (; i < name.length() && i < 200; i++) {
            char c = name.charAt(i);
            out.append(c < 0x20 || c == 0x7f ? String.format("\\x%02x", (int) c) : String.valueOf(c));
        }
        return i < name.length() ? out + "..." : out.toString();
    }
}
