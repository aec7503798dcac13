package dev.crucible.image.build;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** How a Dockerfile's arguments read: words split as a shell splits them, quotes removed, variables expanded. */
final class DockerfileWords {
    private static final Pattern VARIABLE = Pattern.compile(
            "\\\\\\$|\\$\\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?}|\\$([A-Za-z_][A-Za-z0-9_]*)");

    private DockerfileWords() {}

    /** Words split on unquoted blanks; quotes are kept (see {@link #unquote}). */
    static List<String> words(String text) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        char quote = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\\' && i + 1 < text.length() && quote != '\'') {
                word.append(c).append(text.charAt(++i));
            } else if (quote != 0) {
                word.append(c);
                if (c == quote) {
                    quote = 0;
                }
            } else if (c == '"' || c == '\'') {
                quote = c;
                word.append(c);
            } else if (Character.isWhitespace(c)) {
                if (!word.isEmpty()) {
                    words.add(word.toString());
                    word.setLength(0);
                }
            } else {
                word.append(c);
            }
        }
        if (!word.isEmpty()) {
            words.add(word.toString());
        }
        return words;
    }

    /** Quotes removed and backslash escapes taken, as a shell would. */
    static String unquote(String word) {
        StringBuilder out = new StringBuilder();
        char quote = 0;
        for (int i = 0; i < word.length(); i++) {
            char c = word.charAt(i);
            if (c == '\\' && i + 1 < word.length() && quote != '\'') {
                out.append(word.charAt(++i));
            } else if (quote == 0 && (c == '"' || c == '\'')) {
                quote = c;
            } else if (c == quote) {
                quote = 0;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    /**
     * {@code $VAR}, {@code ${VAR}}, {@code ${VAR:-word}} and {@code ${VAR:+word}} of {@code vars} replaced in
     * {@code text}; {@code \$} is a dollar sign.
     */
    static String expand(String text, Map<String, String> vars) {
        Matcher m = VARIABLE.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String replacement;
            if (m.group().equals("\\$")) {
                replacement = "$";
            } else {
                String name = m.group(1) != null ? m.group(1) : m.group(4);
                String value = vars.get(name);
                boolean set = value != null && !value.isEmpty();
                if ("-".equals(m.group(2))) {
                    replacement = set ? value : m.group(3);
                } else if ("+".equals(m.group(2))) {
                    replacement = set ? m.group(3) : "";
                } else {
                    replacement = value == null ? "" : value;
                }
            }
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        return out.toString();
    }
}
