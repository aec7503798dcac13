package dev.crucible.server.ports;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.function.Predicate;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Signed, expiring preview links: what lets a browser, which cannot send a bearer token when it navigates, open one
 * port of one session. A token is {@code b64url(payload) "." b64url(HMAC-SHA256(key, payload))}, the payload naming
 * the version, the session, its owner, the port, the expiry and the nonce of the life it is bound to (an E2B sandbox's
 * traffic token: {@link #verify(String, long, Predicate)}); it is checked in constant time. Tokens of an earlier
 * version ({@code v1}, bound to nothing) are refused. The key is 32 random
 * bytes in {@code <data-dir>/preview.key} (0600, written once: replicas sharing the data directory share it); deleting
 * the file and restarting revokes every link. Thread-safe.
 */
public final class PreviewTokens {
    /** The longest a link may live (a session's own end comes first when sooner). */
    public static final long MAX_TTL_S = 24 * 3600;
    /** A link's life when none is asked for. */
    public static final long DEFAULT_TTL_S = 3600;
    private static final String VERSION = "v2";
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    private final byte[] key;

    PreviewTokens(byte[] key) {
        this.key = key.clone();
    }

    /**
     * What a valid token grants: one port of one session of one owner (port 0: every port, an E2B sandbox's traffic
     * token), until {@code expiresAtMs}, while the life named {@code nonce} lasts (empty: bound to no life but the
     * session's own; never for port 0).
     */
    public record Grant(String owner, String session, int port, long expiresAtMs, String nonce) {
        public Grant {
            if (nonce.contains("\n")) {
                throw new IllegalArgumentException("a nonce is one line");
            }
        }

        /** A preview link's grant: bound to no life but its session's. */
        public Grant(String owner, String session, int port, long expiresAtMs) {
            this(owner, session, port, expiresAtMs, "");
        }
    }

    /**
     * The tokens of {@code dataDir}: its key, made on first use (a race between replicas leaves one key, the first
     * renamed into place).
     */
    public static PreviewTokens in(Path dataDir) throws IOException {
        Path file = dataDir.resolve("preview.key");
        if (!Files.exists(file)) {
            byte[] fresh = new byte[32];
            new SecureRandom().nextBytes(fresh);
            Path temp = Files.createTempFile(dataDir, "preview.key", ".tmp",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            try {
                Files.write(temp, fresh);
                try {
                    Files.createLink(file, temp); // link(2) never replaces: the first key in place stays
                } catch (FileAlreadyExistsException e) {
                    // another replica's key won: read back below
                }
            } finally {
                Files.deleteIfExists(temp);
            }
        }
        byte[] key = Files.readAllBytes(file);
        if (key.length < 32) {
            throw new IOException(file + " holds " + key.length + " bytes, not a 32-byte key: delete it to make a new"
                    + " one (every preview link made with the old one stops working)");
        }
        return new PreviewTokens(key);
    }

    /** A token granting {@code grant}. */
    public String mint(Grant grant) {
        return sign(String.join("\n", VERSION, grant.session(), Integer.toString(grant.port()),
                Long.toString(grant.expiresAtMs()), grant.owner(), grant.nonce()));
    }

    /** {@code payload} signed as a token (whatever its form: a test makes tokens of other versions). */
    String sign(String payload) {
        byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        return B64.encodeToString(p) + "." + B64.encodeToString(mac(p));
    }

    /**
     * What {@code token} grants at {@code nowMs}, checked as {@link #verify(String, long)} and, when it is bound to a
     * life ({@link Grant#nonce()}), against {@code current}: whether that life still lasts (an E2B sandbox not killed,
     * its traffic tokens not rotated since). A grant of every port (port 0) is always bound.
     *
     * @throws RequestException {@code invalid_preview} as {@link #verify(String, long)}, or when its life has ended
     */
    public Grant verify(String token, long nowMs, Predicate<Grant> current) {
        Grant grant = verify(token, nowMs);
        if (grant.port() == 0 && grant.nonce().isEmpty()) {
            throw invalid("a grant of every port must be bound to its sandbox's life");
        }
        if (!grant.nonce().isEmpty() && !current.test(grant)) {
            throw invalid("its sandbox is gone, or its traffic tokens were rotated since: use its current"
                    + " trafficAccessToken (connect to it again)");
        }
        return grant;
    }

    /**
     * What {@code token} grants at {@code nowMs}.
     *
     * @throws RequestException {@code invalid_preview} for a malformed, forged or expired token (its life unchecked:
     *     callers outside this package use {@link #verify(String, long, Predicate)})
     */
    Grant verify(String token, long nowMs) {
        int dot = token == null ? -1 : token.indexOf('.');
        if (dot <= 0 || token.length() > 2048) {
            throw invalid("it is not a preview token");
        }
        byte[] payload;
        byte[] signature;
        try {
            payload = Base64.getUrlDecoder().decode(token.substring(0, dot));
            signature = Base64.getUrlDecoder().decode(token.substring(dot + 1));
        } catch (IllegalArgumentException e) {
            throw invalid("it is not a preview token");
        }
        // one spelling per token: base64's last character has bits the decoder drops, so two strings could decode
        // to the same signature; only the canonical one is this server's
        if (!B64.encodeToString(payload).equals(token.substring(0, dot))
                || !B64.encodeToString(signature).equals(token.substring(dot + 1))) {
            throw invalid("it is not a preview token in its canonical form");
        }
        if (!MessageDigest.isEqual(mac(payload), signature)) {
            throw invalid("its signature is not this server's (forged, or made with a key since replaced)");
        }
        String[] f = new String(payload, StandardCharsets.UTF_8).split("\n", -1);
        if (f[0].equals("v1")) {
            throw invalid("it was made by an earlier version of this server, whose tokens are bound to no life: ask"
                    + " for a new one");
        }
        if (f.length != 6 || !f[0].equals(VERSION)) {
            throw invalid("it is of another version");
        }
        long expires = Long.parseLong(f[3]);
        if (nowMs >= expires) {
            throw invalid("it expired at " + Instant.ofEpochMilli(expires) + "; ask for a new one");
        }
        return new Grant(f[4], f[1], Integer.parseInt(f[2]), expires, f[5]);
    }

    /**
     * A secret of this server's for {@code value}, as 64 hex digits: HMAC-SHA-256 under the same key, apart from
     * preview tokens by its {@code purpose} (an E2B sandbox's access token: nothing to store, the same after a restart).
     */
    public String derive(String purpose, String value) {
        return HexFormat.of().formatHex(mac((purpose + "\0" + value).getBytes(StandardCharsets.UTF_8)));
    }

    private byte[] mac(byte[] payload) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(payload);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }

    private static RequestException invalid(String why) {
        return new RequestException(ErrorCode.INVALID_PREVIEW, "this preview link does not open anything: " + why);
    }
}
