package dev.crucible.image.spec;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * Digest strings ({@code sha256:<64 hex>}): strict validation, since their hex becomes a file name, and hashing. Every
 * digest that names a file anywhere in the image packages goes through {@link #hex} or {@link #valid} first.
 */
public final class Digests {
    static final Pattern SHA256 = Pattern.compile("sha256:[a-f0-9]{64}");
    /** 64 lowercase hex digits: the file name of a blob or root. */
    public static final Pattern HEX = Pattern.compile("[a-f0-9]{64}");
    /** The OCI grammar of a digest of any algorithm: told apart so another algorithm is UNSUPPORTED, not garbage. */
    private static final Pattern ANY = Pattern.compile("[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+");

    private Digests() {}

    /** The 64 hex digits of a sha256 digest; throws UNSUPPORTED for another algorithm, INVALID_REFERENCE for garbage. */
    public static String hex(String digest) throws ImageException {
        if (digest != null && SHA256.matcher(digest).matches()) {
            return digest.substring("sha256:".length());
        }
        if (digest != null && digest.length() <= 256 && !digest.startsWith("sha256:") && ANY.matcher(digest).matches()) {
            throw new ImageException(ImageException.Failure.UNSUPPORTED, "digest " + digest
                    + " uses an algorithm Crucible does not store: only sha256 digests are supported");
        }
        throw new ImageException(ImageException.Failure.INVALID_REFERENCE, "'" + clip(digest)
                + "' is not a digest: expected sha256: and 64 lowercase hex digits");
    }

    /** Whether {@code digest} is {@code sha256:} and 64 lowercase hex digits. */
    public static boolean valid(String digest) {
        return digest != null && SHA256.matcher(digest).matches();
    }

    /** A new SHA-256 hash. */
    public static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** {@code sha256:<hex>} of {@code bytes}. */
    public static String of(byte[] bytes) {
        return format(sha256().digest(bytes));
    }

    /** {@code sha256:<hex>} of a finished hash. */
    public static String of(MessageDigest hash) {
        return format(hash.digest());
    }

    private static String format(byte[] hash) {
        return "sha256:" + HexFormat.of().formatHex(hash);
    }

    /** Throws DIGEST_MISMATCH unless {@code bytes} hash to {@code digest}; {@code what} names them in the message. */
    public static void verify(String digest, byte[] bytes, String what) throws ImageException {
        hex(digest);
        String actual = of(bytes);
        if (!actual.equals(digest)) {
            throw new ImageException(ImageException.Failure.DIGEST_MISMATCH, "the " + what + " named " + digest
                    + " hashes to " + actual + ": its source sent other bytes; fetch or export it again");
        }
    }

    /** The first 12 hex digits, as {@code crucible image ls} shows an id. */
    static String shortHex(String digest) {
        String hex = digest.startsWith("sha256:") ? digest.substring(7) : digest;
        return hex.substring(0, Math.min(12, hex.length()));
    }

    /** {@code text} cut after 80 characters, for a message; {@code "null"} for null. */
    public static String clip(String text) {
        return text == null ? "null" : text.length() <= 80 ? text : text.substring(0, 80) + "…";
    }
}
