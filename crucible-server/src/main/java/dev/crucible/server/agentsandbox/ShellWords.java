package dev.crucible.server.agentsandbox;

import java.util.ArrayList;
import java.util.List;

/**
 * Python's {@code shlex.split} (POSIX mode, no comments), which the python-runtime contract applies to
 * {@code /execute}'s {@code command}: words split on whitespace; single quotes literal; inside double quotes a
 * backslash escapes only {@code "} and {@code \}; outside quotes it escapes any character. No shell runs the line.
 */
final class ShellWords {
    private ShellWords() {}

    /**
     * The words of {@code line}.
     *
     * @throws IllegalArgumentException {@code No closing quotation} or {@code No escaped character}, as shlex says
     */
    static List<String> split(String line) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        int i = 0;
        while (i < line.length()) {
            char c = line.charAt(i++);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else if (c == '\'') {
                int end = line.indexOf('\'', i);
                if (end < 0) {
                    throw new IllegalArgumentException("No closing quotation");
                }
                word.append(line, i, end);
                i = end + 1;
                inWord = true;
            } else if (c == '"') {
                i = doubleQuoted(line, i, word);
                inWord = true;
            } else if (c == '\\') {
                if (i >= line.length()) {
                    throw new IllegalArgumentException("No escaped character");
                }
                word.append(line.charAt(i++));
                inWord = true;
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        return words;
    }

    /** Appends a double-quoted part starting after its quote; returns the index after its closing quote. */
    private static int doubleQuoted(String line, int from, StringBuilder word) {
        int i = from;
        while (i < line.length()) {
            char c = line.charAt(i++);
            if (c == '"') {
                return i;
            }
            if (c == '\\' && i < line.length() && (line.charAt(i) == '"' || line.charAt(i) == '\\')) {
                word.append(line.charAt(i++));
            } else {
                word.append(c);
            }
        }
        throw new IllegalArgumentException("No closing quotation");
    }
}
