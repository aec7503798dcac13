package dev.crucible.server.agentsandbox;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** A URL path's percent-encoding undone ({@code %2F} is a slash in the path it names; {@code +} stays a plus). */
final class Paths {
    private Paths() {}

    /**
     * {@code raw} decoded as UTF-8.
     *
     * @throws IllegalArgumentException for a {@code %} not followed by two hex digits
     */
    static String decode(String raw) {
        if (raw.indexOf('%') < 0) {
            return raw;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%') {
                if (i + 2 >= raw.length() || !HexFormat.isHexDigit(raw.charAt(i + 1))
                        || !HexFormat.isHexDigit(raw.charAt(i + 2))) {
                    throw new IllegalArgumentException("a % in a path is followed by two hex digits (%2F is a slash)");
                }
                out.write(HexFormat.fromHexDigits(raw, i + 1, i + 3));
                i += 2;
            } else {
                out.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
