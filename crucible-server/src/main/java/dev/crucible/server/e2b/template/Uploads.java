package dev.crucible.server.e2b.template;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The COPY contexts the SDK uploads: one archive per owner and files hash under {@code <data dir>/e2b/template-files/
 * <owner key>/<hash>}, so one token's upload is never "present" for another. An upload goes to a URL Crucible serves,
 * {@code /templates/uploads/{secret}}: the SDK sends no API key there, so the secret (32 random bytes, one hash of one
 * owner, for an hour, used once) is the grant. An archive is written whole to a temporary file and renamed into
 * place, at most {@value #MAX_BYTES} bytes. Thread-safe.
 */
final class Uploads {
    static final long MAX_BYTES = 1L << 30;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Duration GRANT = Duration.ofHours(1);

    private record Grant(String owner, String hash, Instant until) {}

    private final Path dir;
    private final Map<String, Grant> grants = new ConcurrentHashMap<>();

    Uploads(Path dir) throws IOException {
        this.dir = Files.createDirectories(dir);
    }

    /** The owner's archive of {@code hash}, or null when it was never uploaded. */
    Path file(String owner, String hash) {
        if (!hash.matches("[0-9a-f]{64}")) {
            return null;
        }
        Path file = dir.resolve(TemplateBuild.ownerKey(owner)).resolve(hash);
        return Files.isRegularFile(file) ? file : null;
    }

    /** A new upload secret for the owner's {@code hash}. */
    String grant(String owner, String hash) {
        if (!hash.matches("[0-9a-f]{64}")) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a files hash is 64 hex digits, got '" + hash + "'");
        }
        grants.values().removeIf(g -> g.until().isBefore(Instant.now()));
        byte[] secret = new byte[32];
        RANDOM.nextBytes(secret);
        String key = HexFormat.of().formatHex(secret);
        grants.put(key, new Grant(owner, hash, Instant.now().plus(GRANT)));
        return key;
    }

    /** Stores the body of an upload to {@code secret}; a secret unknown, used or expired is 404. */
    void receive(String secret, InputStream body) throws IOException {
        Grant g = grants.remove(secret);
        if (g == null || g.until().isBefore(Instant.now())) {
            throw new RequestException(ErrorCode.NOT_FOUND, "no such upload: ask GET /templates/{id}/files/{hash}"
                    + " for a new URL");
        }
        Path ownerDir = Files.createDirectories(dir.resolve(TemplateBuild.ownerKey(g.owner())));
        Path temp = Files.createTempFile(ownerDir, "upload-", ".part");
        try {
            try (OutputStream out = Files.newOutputStream(temp)) {
                byte[] buffer = new byte[1 << 16];
                long total = 0;
                for (int n; (n = body.read(buffer)) >= 0; ) {
                    total += n;
                    if (total > MAX_BYTES) {
                        throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "an upload is at most "
                                + (MAX_BYTES >> 20) + " MiB");
                    }
                    out.write(buffer, 0, n);
                }
            }
            Files.move(temp, ownerDir.resolve(g.hash()), StandardCopyOption.REPLACE_EXISTING,
                    StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(temp);
        }
    }
}
