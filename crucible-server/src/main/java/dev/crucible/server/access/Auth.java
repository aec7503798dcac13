package dev.crucible.server.access;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/** Bearer-token check, constant-time per token; no tokens configured means every request passes. Thread-safe. */
public final class Auth {
    /** The WebSocket subprotocol that carries a bearer token from a browser: this, then the token in base64url. */
    public static final String BEARER_PROTOCOL = "crucible.bearer.";
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
     * The credentials of a WebSocket upgrade: its Authorization header, or else (a browser's {@code WebSocket} cannot
     * send headers) the token offered as the subprotocol {@code crucible.bearer.<base64url of the token>}, the way
     * Kubernetes takes one from a browser. The subprotocol the server answers with is the first one offered, so the
     * bearer one must not be first (the token would come back in the answer's headers): offer {@code crucible.terminal}
     * before it.
     *
     * @return an Authorization header's value, or null when there is none
     * @throws RequestException 400 when the bearer subprotocol is offered first or is not base64url
     */
    public static String webSocket(String authorization, String protocols) {
        if (authorization != null || protocols == null) {
            return authorization;
        }
        String[] offered = protocols.split(",");
        for (int i = 0; i < offered.length; i++) {
            String p = offered[i].strip();
            if (!p.startsWith(BEARER_PROTOCOL)) {
                continue;
            }
            if (i == 0) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "offer the subprotocol crucible.terminal before "
                        + BEARER_PROTOCOL + "…: the first one offered is the one the server answers with");
            }
            try {
                return "Bearer " + new String(Base64.getUrlDecoder().decode(
                        p.substring(BEARER_PROTOCOL.length())), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "the subprotocol " + BEARER_PROTOCOL
                        + "… carries the token in base64url (RFC 4648 §5, padding left off)");
            }
        }
        return null;
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
            return HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
