package dev.crucible.server.e2b;

import dev.crucible.session.spec.SessionConfig;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/** The spares {@code serve --session-spares} asks for ({@link #of}). Stateless. */
final class Spares {
    private Spares() {}

    /**
     * The spares {@code serve --session-spares} asks for: {@code N} Python sessions, or {@code KIND[=N],...} where a
     * kind is what an E2B {@code templateID} names ({@code named} first, then a language, an image, E2B's own names,
     * each with an optional tier: {@code python}, {@code node@gvisor}, {@code code-interpreter-v1}), so that an E2B
     * create of that template, or a session create of that language, image and tier, takes one.
     *
     * @throws IllegalArgumentException for a count that is not 0 to 16, or more than 16 in all
     */
    static List<SessionConfig.Spare> of(String spec, Map<String, String> named) {
        String s = spec.strip();
        if (s.matches("\\d+")) {
            int n = Integer.parseInt(s);
            if (n > 16) {
                throw new IllegalArgumentException("--session-spares is 0 to 16 sessions");
            }
            return Collections.nCopies(n, SessionConfig.Spare.PYTHON);
        }
        List<SessionConfig.Spare> kept = new ArrayList<>();
        for (String part : s.split(",")) {
            int eq = part.lastIndexOf('=');
            String kind = (eq < 0 ? part : part.substring(0, eq)).strip();
            String count = eq < 0 ? "1" : part.substring(eq + 1).strip();
            if (kind.isEmpty() || !count.matches("\\d{1,2}")) {
                throw new IllegalArgumentException("--session-spares takes N or KIND[=N],... (" + part.strip() + ")");
            }
            Template t = Template.of(kind, named);
            kept.addAll(Collections.nCopies(Integer.parseInt(count),
                    new SessionConfig.Spare(t.language(), t.image(), t.isolation())));
            if (kept.size() > 16) {
                throw new IllegalArgumentException("--session-spares keeps at most 16 sessions in all");
            }
        }
        return kept;
    }
}
