package dev.crucible.server.access;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.Set;

/** Bearer-token check, constant-time per token; no tokens configured means every request passes. Thread-safe. */
public final class Auth {
    private final List<byte[]> tokens;

    /** @param tokens the accepted bearer tokens; empty: no authentication */
    public Auth(Set<String> tokens) {
        this.tokens = tokens.stream().map(t -> t.getBytes(StandardCharsets.UTF_8)).toList();
    }

    boolean enabled() {
        return !tokens.isEmpty();
    }

    /**
     * @param authorization the Authorization header, or null
     * @throws RequestException 401 when tokens are configured and the header carries none of them
     */
    public void check(String authorization) {
        if (tokens.isEmpty()) {
            return;
        }
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            throw new RequestException(ErrorCode.UNAUTHORIZED, "missing bearer token (Authorization: Bearer <token>)");
        }
        byte[] given = authorization.substring(7).strip().getBytes(StandardCharsets.UTF_8);
        boolean match = false;
        for (byte[] token : tokens) {
            match |= MessageDigest.isEqual(token, given); // every token compared: no early exit to time
        }
        if (!match) {
            throw new RequestException(ErrorCode.UNAUTHORIZED, "invalid bearer token");
        }
    }

    /**
     * Who owns what this request creates: the SHA-256 of its (already checked) token, hex, so that no token is
     * kept on disk; "" when the server runs without tokens.
     */
    public String owner(String authorization) {
        if (tokens.isEmpty() || authorization == null || authorization.length() < 7) {
            return "";
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(authorization.substring(7).strip()
                    .getBytes(StandardCharsets.UTF_8));
            return java.util.HexFormat.of().formatHex(digest);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
