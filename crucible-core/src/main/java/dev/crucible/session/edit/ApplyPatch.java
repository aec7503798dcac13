package dev.crucible.session.edit;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * OpenAI's {@code apply_patch} tool over a session's files
 * (https://developers.openai.com/api/docs/guides/tools-apply-patch): one operation per call, {@code create_file} or
 * {@code update_file} with a V4A {@code diff} ({@link V4aDiff}), or {@code delete_file}; answered as the
 * {@code apply_patch_call_output} item's {@code status} and {@code output}. Also takes a whole Codex-style patch
 * ({@code *** Begin Patch} … {@code *** End Patch} with {@code Add}, {@code Update} (and {@code Move to}) and
 * {@code Delete File} sections), which it applies only when every section applies. Thread-safe.
 */
public final class ApplyPatch {
    /** One operation, as the model's {@code apply_patch_call} carries it. */
    public record Operation(String type, String path, String diff) {}

    /** The {@code apply_patch_call_output}'s fields: completed or failed, and what to tell the model. */
    public record Outcome(boolean completed, String output) {
        public String status() {
            return completed ? "completed" : "failed";
        }
    }

    private final EditFiles files;

    public ApplyPatch(EditFiles files) {
        this.files = files;
    }

    /** Applies one operation; a mistake of the model is a failed outcome, never an exception. */
    public Outcome apply(Operation op) {
        try {
            String type = op.type() == null ? "" : op.type().strip();
            String path = EditPaths.of(op.path());
            return switch (type) {
                case "create_file" -> {
                    files.write(path, utf8(V4aDiff.apply("", required(op.diff()), V4aDiff.Mode.CREATE)));
                    yield new Outcome(true, "Created " + EditPaths.shown(path));
                }
                case "update_file" -> {
                    String updated = V4aDiff.apply(files.readText(path), required(op.diff()), V4aDiff.Mode.UPDATE);
                    files.write(path, utf8(updated));
                    yield new Outcome(true, "Updated " + EditPaths.shown(path));
                }
                case "delete_file" -> {
                    files.read(path); // a missing file is the model's mistake, said as such
                    files.delete(path);
                    yield new Outcome(true, "Deleted " + EditPaths.shown(path));
                }
                default -> new Outcome(false, "Unknown operation type '" + type + "': create_file, update_file or"
                        + " delete_file");
            };
        } catch (PatchException e) {
            return new Outcome(false, e.getMessage());
        } catch (RequestException e) {
            return new Outcome(false, e.code() == ErrorCode.FILE_NOT_FOUND ? "File not found: " + op.path()
                    : e.getMessage());
        }
    }

    /**
     * Applies a whole {@code *** Begin Patch} envelope: every section is checked against the files first, then all
     * are written, so that a patch whose third section does not apply changes nothing.
     */
    public Outcome applyEnvelope(String patch) {
        try {
            List<Change> changes = new ArrayList<>();
            for (Section section : sections(patch)) {
                changes.add(plan(section));
            }
            List<String> done = new ArrayList<>();
            for (Change change : changes) {
                if (change.text() == null) {
                    files.delete(change.path());
                    done.add("D " + EditPaths.shown(change.path()));
                } else {
                    files.write(change.target(), utf8(change.text()));
                    if (!change.target().equals(change.path())) {
                        files.delete(change.path());
                    }
                    done.add((change.created() ? "A " : "M ") + EditPaths.shown(change.target()));
                }
            }
            return new Outcome(true, "Done!\n" + String.join("\n", done));
        } catch (PatchException e) {
            return new Outcome(false, e.getMessage());
        } catch (RequestException e) {
            return new Outcome(false, e.getMessage());
        }
    }

    private record Section(String kind, String path, String moveTo, String body) {}

    /** What one section does: the new text of {@code target} (null: delete {@code path}). */
    private record Change(String path, String target, String text, boolean created) {}

    private Change plan(Section s) {
        String path = EditPaths.of(s.path());
        return switch (s.kind()) {
            case "Add" -> new Change(path, path, V4aDiff.apply("", s.body(), V4aDiff.Mode.CREATE), true);
            case "Delete" -> {
                files.readText(path);
                yield new Change(path, path, null, false);
            }
            default -> new Change(path, s.moveTo() == null ? path : EditPaths.of(s.moveTo()),
                    V4aDiff.apply(files.readText(path), s.body(), V4aDiff.Mode.UPDATE), false);
        };
    }

    private static List<Section> sections(String patch) {
        List<String> lines = List.of(patch.replace("\r\n", "\n").strip().split("\n", -1));
        if (lines.isEmpty() || !lines.getFirst().strip().equals("*** Begin Patch")) {
            throw new PatchException("Invalid patch: the first line must be '*** Begin Patch'");
        }
        List<Section> sections = new ArrayList<>();
        int i = 1;
        while (i < lines.size() && !lines.get(i).strip().equals(V4aDiff.END_PATCH)) {
            String header = lines.get(i);
            String kind = header.startsWith("*** Add File: ") ? "Add" : header.startsWith("*** Delete File: ")
                    ? "Delete" : header.startsWith("*** Update File: ") ? "Update" : null;
            if (kind == null) {
                throw new PatchException("Invalid patch line " + (i + 1) + ": '" + header + "' (expected '*** Add"
                        + " File: ', '*** Update File: ', '*** Delete File: ' or '*** End Patch')");
            }
            String path = header.substring(header.indexOf(": ") + 2).strip();
            i++;
            String moveTo = null;
            if (kind.equals("Update") && i < lines.size() && lines.get(i).startsWith("*** Move to: ")) {
                moveTo = lines.get(i).substring("*** Move to: ".length()).strip();
                i++;
            }
            StringBuilder body = new StringBuilder();
            while (i < lines.size() && !lines.get(i).startsWith("*** Add File: ")
                    && !lines.get(i).startsWith("*** Delete File: ") && !lines.get(i).startsWith("*** Update File: ")
                    && !lines.get(i).strip().equals(V4aDiff.END_PATCH)) {
                body.append(lines.get(i)).append('\n');
                i++;
            }
            sections.add(new Section(kind, path, moveTo, body.toString()));
        }
        if (i >= lines.size()) {
            throw new PatchException("Invalid patch: it does not end with '*** End Patch'");
        }
        if (sections.isEmpty()) {
            throw new PatchException("Invalid patch: it changes no file");
        }
        return sections;
    }

    private static String required(String diff) {
        if (diff == null) {
            throw new PatchException("The operation needs its 'diff' (V4A: lines starting with '+', and for an update"
                    + " '@@' anchors and ' ', '-', '+' lines)");
        }
        return diff;
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
