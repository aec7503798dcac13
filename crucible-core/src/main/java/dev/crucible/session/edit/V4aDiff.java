package dev.crucible.session.edit;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Applies a V4A diff, the hunk format of OpenAI's {@code apply_patch} tool, to a file's text: {@code @@ anchor} lines
 * (stacked to narrow the search), then lines starting with a space (context), {@code -} (removed) or {@code +} (added),
 * optionally ending in {@code *** End of File}; no line numbers. Context is found exactly, then ignoring trailing
 * whitespace, then ignoring surrounding whitespace, as OpenAI's reference applier ({@code apply_diff} of
 * openai-agents-python) does, with its error messages. The file's line ending (LF or CRLF) is kept.
 */
public final class V4aDiff {
    /** Whether the diff updates an existing text or creates a file (every line {@code +}). */
    public enum Mode { UPDATE, CREATE }

    static final String END_PATCH = "*** End Patch";
    static final String END_FILE = "*** End of File";
    private static final List<String> SECTION_ENDS = List.of(END_PATCH, "*** Update File:", "*** Delete File:",
            "*** Add File:");
    private static final List<String> HUNK_ENDS = List.of(END_PATCH, "*** Update File:", "*** Delete File:",
            "*** Add File:", END_FILE);

    private V4aDiff() {}

    /**
     * The text after applying {@code diff} to {@code input} ({@code ""} in {@link Mode#CREATE}).
     *
     * @throws PatchException when the diff is malformed or its context is not in the text
     */
    public static String apply(String input, String diff, Mode mode) {
        String newline = mode != Mode.CREATE && input.contains("\n") ? newlineOf(input) : newlineOf(diff);
        List<String> lines = diffLines(diff);
        if (mode == Mode.CREATE) {
            return create(lines, newline);
        }
        String text = input.replace("\r\n", "\n");
        return applyChunks(text, parseUpdate(lines, text), newline);
    }

    private static String newlineOf(String text) {
        return text.contains("\r\n") ? "\r\n" : "\n";
    }

    private static List<String> diffLines(String diff) {
        List<String> lines = new ArrayList<>();
        for (String line : diff.split("\r?\n", -1)) {
            lines.add(line.endsWith("\r") ? line.substring(0, line.length() - 1) : line);
        }
        if (!lines.isEmpty() && lines.getLast().isEmpty()) {
            lines.removeLast();
        }
        lines.add(END_PATCH);
        return lines;
    }

    private static boolean startsWithAny(String line, List<String> prefixes) {
        return prefixes.stream().anyMatch(line::startsWith);
    }

    private static String create(List<String> lines, String newline) {
        List<String> out = new ArrayList<>();
        for (String line : lines) {
            if (startsWithAny(line, SECTION_ENDS)) {
                break;
            }
            if (!line.startsWith("+")) {
                throw new PatchException("Invalid Add File Line: " + line);
            }
            out.add(line.substring(1));
        }
        return String.join(newline, out);
    }

    /** A change at a line of the original: lines removed there, lines put in their place. */
    private record Chunk(int origIndex, List<String> removed, List<String> added) {
        Chunk shifted(int by) {
            return new Chunk(origIndex + by, removed, added);
        }
    }

    /** One hunk: its context (kept and removed lines, in order), its chunks, where it ends, and whether at EOF. */
    private record Section(List<String> context, List<Chunk> chunks, int end, boolean eof) {}

    private static List<Chunk> parseUpdate(List<String> lines, String text) {
        List<String> input = List.of(text.split("\n", -1));
        List<Chunk> chunks = new ArrayList<>();
        int index = 0;
        int cursor = 0;
        while (index < lines.size() && !startsWithAny(lines.get(index), HUNK_ENDS)) {
            List<String> anchors = new ArrayList<>();
            boolean anchored = false;
            while (index < lines.size()) {
                String line = lines.get(index);
                if (line.startsWith("@@ ")) {
                    String anchor = line.substring(3);
                    anchored |= !anchor.isEmpty();
                    if (!anchor.isBlank()) {
                        anchors.add(anchor);
                    }
                } else if (line.equals("@@")) {
                    anchored = true;
                } else {
                    break;
                }
                index++;
            }
            if (!anchored && cursor != 0) {
                throw new PatchException("Invalid Line:\n" + (index < lines.size() ? lines.get(index) : ""));
            }
            for (String anchor : anchors) {
                cursor = advanceTo(anchor, input, cursor);
            }
            Section section = readSection(lines, index);
            int found = findContext(input, section.context(), cursor, section.eof());
            if (found < 0) {
                throw new PatchException((section.eof() ? "Invalid EOF Context " : "Invalid Context ") + cursor
                        + ":\n" + String.join("\n", section.context()));
            }
            cursor = found + section.context().size();
            index = section.end();
            for (Chunk chunk : section.chunks()) {
                chunks.add(chunk.shifted(found));
            }
        }
        return chunks;
    }

    /** The line after the first one at or past {@code cursor} equal to {@code anchor} (exactly, then stripped). */
    private static int advanceTo(String anchor, List<String> input, int cursor) {
        for (UnaryOperator<String> norm : List.<UnaryOperator<String>>of(s -> s, String::strip)) {
            String wanted = norm.apply(anchor);
            if (input.subList(0, Math.min(cursor, input.size())).stream().anyMatch(l -> norm.apply(l).equals(wanted))) {
                continue; // already passed: the anchor names the block the cursor is in
            }
            for (int i = cursor; i < input.size(); i++) {
                if (norm.apply(input.get(i)).equals(wanted)) {
                    return i + 1;
                }
            }
        }
        return cursor; // an anchor that matches nothing is advisory: the context finds the place
    }

    private enum LineKind { KEEP, ADD, REMOVE }

    private static Section readSection(List<String> lines, int start) {
        List<String> context = new ArrayList<>();
        List<String> removed = new ArrayList<>();
        List<String> added = new ArrayList<>();
        List<Chunk> chunks = new ArrayList<>();
        LineKind kind = LineKind.KEEP;
        int index = start;
        while (index < lines.size()) {
            String raw = lines.get(index);
            if (raw.startsWith("@@") || startsWithAny(raw, HUNK_ENDS) || raw.equals("***")) {
                break;
            }
            if (raw.startsWith("***")) {
                throw new PatchException("Invalid Line: " + raw);
            }
            index++;
            LineKind last = kind;
            String line = raw.isEmpty() ? " " : raw;
            kind = switch (line.charAt(0)) {
                case '+' -> LineKind.ADD;
                case '-' -> LineKind.REMOVE;
                case ' ' -> LineKind.KEEP;
                default -> throw new PatchException("Invalid Line: " + line);
            };
            String content = line.substring(1);
            if (kind == LineKind.KEEP && last != kind && (!removed.isEmpty() || !added.isEmpty())) {
                chunks.add(new Chunk(context.size() - removed.size(), List.copyOf(removed), List.copyOf(added)));
                removed.clear();
                added.clear();
            }
            switch (kind) {
                case REMOVE -> {
                    removed.add(content);
                    context.add(content);
                }
                case ADD -> added.add(content);
                case KEEP -> context.add(content);
            }
        }
        if (!removed.isEmpty() || !added.isEmpty()) {
            chunks.add(new Chunk(context.size() - removed.size(), List.copyOf(removed), List.copyOf(added)));
        }
        if (index < lines.size() && lines.get(index).equals(END_FILE)) {
            return new Section(context, chunks, index + 1, true);
        }
        if (index == start) {
            throw new PatchException("Nothing in this section - index=" + index + " "
                    + (index < lines.size() ? lines.get(index) : ""));
        }
        return new Section(context, chunks, index, false);
    }

    /** Where {@code context} starts at or after {@code start} (near the end first when {@code eof}), or -1. */
    private static int findContext(List<String> input, List<String> context, int start, boolean eof) {
        if (eof) {
            int atEnd = findContext(input, context, Math.max(0, input.size() - context.size()), false);
            if (atEnd >= 0) {
                return atEnd;
            }
        }
        if (context.isEmpty()) {
            return start;
        }
        for (UnaryOperator<String> norm : List.<UnaryOperator<String>>of(s -> s, String::stripTrailing,
                String::strip)) {
            for (int i = start; i + context.size() <= input.size(); i++) {
                if (matches(input, context, i, norm)) {
                    return i;
                }
            }
        }
        return -1;
    }

    private static boolean matches(List<String> input, List<String> context, int at, UnaryOperator<String> norm) {
        for (int k = 0; k < context.size(); k++) {
            if (!norm.apply(input.get(at + k)).equals(norm.apply(context.get(k)))) {
                return false;
            }
        }
        return true;
    }

    private static String applyChunks(String text, List<Chunk> chunks, String newline) {
        List<String> original = List.of(text.split("\n", -1));
        List<String> out = new ArrayList<>();
        int cursor = 0;
        for (Chunk chunk : chunks) {
            if (chunk.origIndex() > original.size()) {
                throw new PatchException("applyDiff: chunk.origIndex " + chunk.origIndex() + " > input length "
                        + original.size());
            }
            if (cursor > chunk.origIndex()) {
                throw new PatchException("applyDiff: overlapping chunk at " + chunk.origIndex() + " (cursor " + cursor
                        + ")");
            }
            out.addAll(original.subList(cursor, chunk.origIndex()));
            out.addAll(chunk.added());
            cursor = chunk.origIndex() + chunk.removed().size();
        }
        if (cursor < original.size()) {
            out.addAll(original.subList(cursor, original.size()));
        }
        return String.join(newline, out);
    }
}
