package dev.crucible.session.edit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestDirs;
import dev.crucible.session.workspace.Workspace;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Anthropic's text editor and OpenAI's apply_patch on a real workspace directory (through {@link Workspace}, the same
 * guarded file access the files API uses): the documented messages, {@code cat -n} views, line endings kept, and a
 * patch that changes nothing when one of its sections does not apply.
 */
class EditToolsTest {
    Path dir;
    EditFiles files;

    @BeforeEach
    void workspace() {
        dir = TestDirs.create("edit-tools");
        Workspace w = new Workspace(dir, -1);
        files = new EditFiles() {
            @Override
            public byte[] read(String path) {
                return w.read(path, 1 << 20);
            }

            @Override
            public void write(String path, byte[] data) {
                w.write(path, data);
            }

            @Override
            public void delete(String path) {
                w.delete(path);
            }

            @Override
            public List<Entry> list(String path) {
                return w.list(path).stream().map(e -> new Entry(e.path(), e.type().equals("directory"))).toList();
            }
        };
    }

    private TextEditor.Outcome edit(String command, String path, String fileText, String oldStr, String newStr,
            Integer insertLine, List<Integer> range) {
        return new TextEditor(files).call(new TextEditor.Call(command, path, fileText, oldStr, newStr, insertLine,
                null, range, null));
    }

    private String file(String name) throws Exception {
        return Files.readString(dir.resolve(name), StandardCharsets.UTF_8);
    }

    @Test
    void createThenViewShowsNumberedLines() throws Exception {
        assertThat(edit("create", "/workspace/src/app.py", "a = 1\n\tb = 2\n", null, null, null, null))
                .isEqualTo(new TextEditor.Outcome("File created successfully at: /workspace/src/app.py", false));
        assertThat(file("src/app.py")).isEqualTo("a = 1\n\tb = 2\n");
        assertThat(edit("view", "/workspace/src/app.py", null, null, null, null, null).text()).isEqualTo(
                "Here's the result of running `cat -n` on /workspace/src/app.py:\n     1\ta = 1\n     2\t\tb = 2\n");
        assertThat(edit("view", "src/app.py", null, null, null, null, List.of(2, -1)).text())
                .endsWith(":\n     2\t\tb = 2\n");
        TextEditor.Outcome listing = edit("view", "/workspace", null, null, null, null, null);
        assertThat(listing.text()).contains("/workspace/src/\n/workspace/src/app.py");
    }

    @Test
    void strReplaceNeedsExactlyOneMatchAndSaysSoInTheDocumentedWords() throws Exception {
        Files.writeString(dir.resolve("m.py"), "x = 1\nx = 1\ny = 2\r\n");
        assertThat(edit("str_replace", "/workspace/m.py", null, "x = 1", "x = 3", null, null)).isEqualTo(
                new TextEditor.Outcome("Error: Found 2 matches for replacement text. Please provide more context to"
                        + " make a unique match.", true));
        assertThat(edit("str_replace", "/workspace/m.py", null, "z = 9", "", null, null)).isEqualTo(
                new TextEditor.Outcome("Error: No match found for replacement. Please check your text and try again.",
                        true));
        assertThat(edit("str_replace", "/workspace/m.py", null, "y = 2", "y = 5", null, null)).isEqualTo(
                new TextEditor.Outcome("Successfully replaced text at exactly one location.", false));
        assertThat(file("m.py")).isEqualTo("x = 1\nx = 1\ny = 5\r\n");
        assertThat(edit("str_replace", "/workspace/none.py", null, "a", "b", null, null).text())
                .startsWith("Error: File not found");
    }

    @Test
    void insertPutsWholeLinesAfterTheGivenLine() throws Exception {
        Files.writeString(dir.resolve("i.txt"), "one\ntwo\n");
        assertThat(edit("insert", "/workspace/i.txt", null, null, "zero\n", 0, null).error()).isFalse();
        assertThat(edit("insert", "/workspace/i.txt", null, null, "three", 3, null).error()).isFalse();
        assertThat(file("i.txt")).isEqualTo("zero\none\ntwo\nthree\n");
        assertThat(edit("insert", "/workspace/i.txt", null, null, "x", 9, null).text()).isEqualTo("Error: Invalid"
                + " `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 4]");
        Files.writeString(dir.resolve("crlf.txt"), "a\r\nb\r\n");
        edit("insert", "/workspace/crlf.txt", null, null, "mid", 1, null);
        assertThat(file("crlf.txt")).isEqualTo("a\r\nmid\r\nb\r\n");
    }

    @Test
    void pathsTheFilesRefuseAndBinaryFilesAreErrorsWithAReason() throws Exception {
        // this EditFiles is a workspace alone: an absolute path outside it reaches it as absolute, and is refused there
        assertThat(edit("view", "/etc/passwd", null, null, null, null, null).text()).startsWith("Error: ")
                .contains("/etc/passwd");
        assertThat(edit("create", "/workspace/../x", "x", null, null, null, null).error()).isTrue();
        Files.write(dir.resolve("b.bin"), new byte[] {(byte) 0xff, (byte) 0xfe, 0});
        assertThat(edit("view", "/workspace/b.bin", null, null, null, null, null).text()).contains("binary");
        assertThat(edit("frobnicate", "/workspace/b.bin", null, null, null, null, null).text())
                .startsWith("Error: Unrecognized command frobnicate");
    }

    @Test
    void applyPatchOperationsCreateUpdateAndDelete() throws Exception {
        ApplyPatch patch = new ApplyPatch(files);
        assertThat(patch.apply(new ApplyPatch.Operation("create_file", "lib/hello.py", "+def hi():\n+    return 1\n+")))
                .isEqualTo(new ApplyPatch.Outcome(true, "Created /workspace/lib/hello.py"));
        assertThat(file("lib/hello.py")).isEqualTo("def hi():\n    return 1\n");
        assertThat(patch.apply(new ApplyPatch.Operation("update_file", "/workspace/lib/hello.py",
                "@@ def hi():\n-    return 1\n+    return 2\n")).completed()).isTrue();
        assertThat(file("lib/hello.py")).isEqualTo("def hi():\n    return 2\n");
        ApplyPatch.Outcome wrong = patch.apply(new ApplyPatch.Operation("update_file", "lib/hello.py",
                "@@\n-    return 7\n+    return 8\n"));
        assertThat(wrong.completed()).isFalse();
        assertThat(wrong.output()).startsWith("Invalid Context");
        assertThat(patch.apply(new ApplyPatch.Operation("delete_file", "lib/hello.py", null)).completed()).isTrue();
        assertThat(dir.resolve("lib/hello.py")).doesNotExist();
        assertThat(patch.apply(new ApplyPatch.Operation("delete_file", "lib/hello.py", null)).output())
                .startsWith("File not found");
    }

    @Test
    void aWholePatchChangesNothingWhenOneSectionDoesNotApply() throws Exception {
        Files.writeString(dir.resolve("a.txt"), "alpha\n");
        Files.writeString(dir.resolve("b.txt"), "beta\n");
        ApplyPatch.Outcome bad = new ApplyPatch(files).applyEnvelope(String.join("\n", "*** Begin Patch",
                "*** Update File: a.txt", "@@", "-alpha", "+ALPHA", "*** Update File: b.txt", "@@", "-gamma", "+GAMMA",
                "*** End Patch"));
        assertThat(bad.completed()).isFalse();
        assertThat(file("a.txt")).isEqualTo("alpha\n");
        ApplyPatch.Outcome good = new ApplyPatch(files).applyEnvelope(String.join("\n", "*** Begin Patch",
                "*** Add File: c.txt", "+gamma", "*** Update File: a.txt", "*** Move to: d.txt", "@@", "-alpha",
                "+ALPHA", "*** Delete File: b.txt", "*** End Patch", ""));
        assertThat(good.output()).isEqualTo("Done!\nA /workspace/c.txt\nM /workspace/d.txt\nD /workspace/b.txt");
        assertThat(file("c.txt")).isEqualTo("gamma");
        assertThat(file("d.txt")).isEqualTo("ALPHA\n");
        assertThat(dir.resolve("a.txt")).doesNotExist();
        assertThat(dir.resolve("b.txt")).doesNotExist();
    }
}
