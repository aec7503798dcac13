package dev.crucible.session.store;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A session id's form: 128 random bits in hex, after {@code replica.} when replicas run (the replica that made it),
 * so that any replica can tell from an id alone where a session was made.
 */
public final class SessionIds {
    private static final HexFormat HEX = HexFormat.of();
    private static final String REPLICA = "[a-z0-9][a-z0-9-]{0,62}";
    private static final Pattern ID = Pattern.compile("(?:(" + REPLICA + ")\\.)?[0-9a-f]{32}");

    private final SecureRandom random = new SecureRandom();

    /**
     * Checks a replica's name: it goes into every id the replica makes.
     *
     * @throws IllegalArgumentException for a name that is not 1-63 lower-case letters, digits and dashes
     */
    public static void checkReplica(String replica) {
        if (replica != null && !replica.matches(REPLICA)) {
            throw new IllegalArgumentException("a replica name is 1-63 lower-case letters, digits and dashes: " + replica);
        }
    }

    /** A new id, made by {@code replica} (null on a single node). */
    public String fresh(String replica) {
        byte[] idBytes = new byte[16];
        random.nextBytes(idBytes);
        return replica == null ? HEX.formatHex(idBytes) : replica + "." + HEX.formatHex(idBytes);
    }

    /** Whether {@code id} has a session id's form (it may name a session of any replica). */
    public static boolean wellFormed(String id) {
        return id != null && ID.matcher(id).matches();
    }

    /** The replica a session id was made by, or null for an id without one. */
    public static String replicaOf(String id) {
        Matcher m = ID.matcher(id == null ? "" : id);
        return m.matches() ? m.group(1) : null;
    }

    /** {@code id} as a refusal may show it: cut, and with nothing but the characters an id may have. */
    public static String shown(String id) {
        return id == null ? "null" : id.length() > 40 ? id.substring(0, 40) + "…" : id.replaceAll("[^0-9a-zA-Z_-]", "?");
    }
}
