package dev.crucible.eval.reward;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The expected output a prompt states in words, read the way a person reads it (reward-kit's {@code
 * local_code_execution_reward} takes it from "Expected output:" in the prompt; its own example is "Expected output: 15
 * (for [1,2,3,4,5])", whose value is 15).
 *
 * <p>Each mention of "expected output" followed by a connector ({@code :}, {@code is}, {@code should be}, {@code =},
 * {@code ->}; optionally "for …" before a colon, Markdown emphasis around it) gives a value: the fenced block that
 * follows (several lines), a quoted or back-quoted value, the lines below an otherwise empty label (up to a blank
 * line), or the rest of the line up to a parenthetical remark, the end of the sentence, a semicolon or a "for
 * [input]" description. The last mention with a value wins. A mention without a connector ("print the expected
 * output", "the expected output format") gives nothing.
 */
final class ExpectedOutput {
    private static final Pattern LABEL = Pattern.compile("(?i)expected\\s+output");
    private static final Pattern CONNECTOR = Pattern.compile(
            "\\G[*_]*(?:\\s+(?:for|of|when|given)\\b[^:\\n]{0,80}?)?\\s*[*_]*\\s*"
                    + "(:|=>|->|=|\\bis\\b|\\b(?:should|would|will|must)\\s+be\\b)[*_]*[ \\t]*[*_]*[ \\t]*",
            Pattern.CASE_INSENSITIVE);
    private static final Pattern FENCE = Pattern.compile("\\G```[^\\n]*\\n([\\s\\S]*?)\\n?```");
    private static final Pattern QUOTED = Pattern.compile("\\G(?:`([^`\\n]+)`|\"([^\"\\n]*)\"|'([^'\\n]*)'|“([^”\\n]*)”)");
    /** Where a one-line value ends: a remark, a sentence's end (not a decimal point), a clause about the input. */
    private static final Pattern LINE_END = Pattern.compile(
            "\\s+\\(|\\.(?=\\s|$)|;|\\s+(?:for|given|with|when)\\s+(?:the\\s+)?(?:input|inputs|\\[|\\(|[a-z]\\w*\\s*=)");

    private ExpectedOutput() {}

    /** The stated expected output of {@code text}, or null when it states none. */
    static String from(String text) {
        if (text == null) {
            return null;
        }
        String found = null;
        Matcher label = LABEL.matcher(text);
        while (label.find()) {
            String value = valueAfter(text, label.end());
            if (value != null && !value.isEmpty()) {
                found = value;
            }
        }
        return found;
    }

    private static String valueAfter(String text, int at) {
        Matcher connector = CONNECTOR.matcher(text);
        if (!connector.find(at) || connector.start() != at) {
            return null;
        }
        int i = connector.end();
        int lineEnd = text.indexOf('\n', i);
        String rest = text.substring(i, lineEnd < 0 ? text.length() : lineEnd);
        if (rest.isBlank() && lineEnd >= 0) { // the value is below the label
            return below(text, lineEnd + 1);
        }
        Matcher fence = FENCE.matcher(text);
        if (fence.find(i) && fence.start() == i) {
            return fence.group(1).strip();
        }
        Matcher quoted = QUOTED.matcher(text);
        if (quoted.find(i) && quoted.start() == i) {
            for (int g = 1; g <= 4; g++) {
                if (quoted.group(g) != null) {
                    return quoted.group(g);
                }
            }
        }
        Matcher end = LINE_END.matcher(rest);
        String value = end.find() ? rest.substring(0, end.start()) : rest;
        return value.replaceAll("^[*_]+|[*_]+$", "").replaceAll("[,:]$", "").strip();
    }

    /** A fenced block or the lines up to a blank line, starting at the first non-blank line from {@code from}. */
    private static String below(String text, int from) {
        String[] lines = text.substring(from).split("\n", -1);
        int first = 0;
        while (first < lines.length && lines[first].isBlank()) {
            first++;
        }
        if (first == lines.length) {
            return null;
        }
        String start = lines[first].strip();
        if (start.startsWith("```")) {
            StringBuilder block = new StringBuilder();
            for (int k = first + 1; k < lines.length && !lines[k].strip().startsWith("```"); k++) {
                block.append(lines[k]).append('\n');
            }
            return block.toString().strip();
        }
        StringBuilder block = new StringBuilder();
        for (int k = first; k < lines.length && !lines[k].isBlank(); k++) {
            block.append(lines[k].strip()).append('\n');
        }
        return block.toString().strip();
    }
}
