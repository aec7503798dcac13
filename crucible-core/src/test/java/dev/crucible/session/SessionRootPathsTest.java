package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.edit.TextEditor;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.workspace.SessionFiles;
import dev.crucible.session.workspace.Workspace;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session's root and its workspace, however a path spells them ({@code /}, {@code /workspace/..}, {@code /../..},
 * {@code .}), on the real sandbox through {@link SessionFiles} and the text editor over it (issue 48): each is a
 * directory as any other, {@code ..} never climbs above the sandbox's root, and a relative {@code ..} (out of the
 * workspace) is refused.
 */
class SessionRootPathsTest {
    static final String ME = "root-paths-owner";
    static final String MARK = "crucible-root-paths-" + ProcessHandle.current().pid();

    @TempDir
    static Path data;

    static SessionManager sessions;
    static SessionInfo session;
    static SessionFiles files;

    @BeforeAll
    static void start() throws Exception {
        Crucible c = TestHost.crucible();
        sessions = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data));
        session = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null));
        files = sessions.files(ME, session.id());
    }

    @AfterAll
    static void stop() {
        if (session != null) {
            sessions.delete(ME, session.id());
        }
        sessions.close();
    }

    private static List<String> names(List<Workspace.Entry> entries) {
        return entries.stream().map(Workspace.Entry::path).toList();
    }

    @Test
    void theRootStatsAsADirectoryHoweverItIsSpelt() {
        for (String root : List.of("/", "/workspace/..", "/../..", "/.", "//", "/tmp/../workspace/../")) {
            Workspace.Entry entry = files.stat(root);
            assertThat(entry.type()).as(root).isEqualTo("directory");
            assertThat(entry.path()).as(root).isEqualTo(root);
        }
        for (String workspace : List.of("", ".", "./", "/workspace", "/workspace/", "/workspace/.", "/tmp/../workspace")) {
            assertThat(files.stat(workspace).type()).as(workspace).isEqualTo("directory");
        }
    }

    @Test
    void listingTheRootByAnySpellingListsTheSandboxsRoot() {
        List<String> root = names(files.list("/"));
        assertThat(root).contains("/workspace", "/usr", "/tmp");
        assertThat(names(files.list("/workspace/.."))).isEqualTo(root);
        assertThat(names(files.list("/../../.."))).isEqualTo(root);
        files.upload("listed.txt", "x".getBytes(StandardCharsets.UTF_8));
        assertThat(names(files.list("."))).isEqualTo(names(files.list(""))).contains("listed.txt");
        assertThat(names(files.list("/workspace/."))).contains("/workspace/listed.txt");
    }

    @Test
    void dotDotAboveTheRootStaysInTheSandboxsRoot() {
        byte[] mine = "the session's\n".getBytes(StandardCharsets.UTF_8);
        files.upload("/tmp/" + MARK, mine);
        assertThat(files.download("/../../../tmp/" + MARK)).isEqualTo(mine);
        assertThat(files.download("/workspace/../../tmp/./" + MARK)).isEqualTo(mine);
        assertThat(Path.of("/tmp", MARK)).as("the host's /tmp is not the session's").doesNotExist();
        files.upload("/workspace/../workspace/up.txt", mine);
        assertThat(files.download("up.txt")).as("/workspace/.. then back in is the workspace").isEqualTo(mine);
    }

    @Test
    void aRelativeDotDotOutOfTheWorkspaceIsRefused() {
        for (String out : List.of("..", "../", "../etc/hostname", "a/../../b")) {
            assertThatThrownBy(() -> files.stat(out)).as(out).isInstanceOf(RequestException.class)
                    .extracting("code").isEqualTo(ErrorCode.INVALID_FILE);
            assertThatThrownBy(() -> files.list(out)).as(out).isInstanceOf(RequestException.class)
                    .hasMessageContaining("name one outside it absolutely");
        }
    }

    @Test
    void theDirectoriesASessionCannotBeWithoutAreNoFiles() {
        byte[] x = {1};
        for (String top : List.of("/", "/workspace/..", ".", "/workspace")) {
            assertThatThrownBy(() -> files.upload(top, x)).as(top).extracting("code").isEqualTo(ErrorCode.NOT_A_FILE);
            assertThatThrownBy(() -> files.download(top)).as(top).extracting("code").isEqualTo(ErrorCode.NOT_A_FILE);
            assertThatThrownBy(() -> files.delete(top)).as(top).extracting("code").isEqualTo(ErrorCode.NOT_A_FILE);
            assertThatThrownBy(() -> files.move(top, "moved")).as(top).extracting("code")
                    .isEqualTo(ErrorCode.NOT_A_FILE);
            assertThatThrownBy(() -> SessionFiles.check(top)).as(top).extracting("code")
                    .isEqualTo(ErrorCode.NOT_A_FILE);
            assertThat(files.makeDirectories(top)).as(top + " is there already").isFalse();
        }
        assertThat(files.stat("/").type()).isEqualTo("directory");
    }

    @Test
    void theTextEditorViewsTheRootAndTheWorkspaceByAnySpelling() {
        TextEditor editor = new TextEditor(files.forEditing());
        files.upload("seen.txt", "x".getBytes(StandardCharsets.UTF_8));
        for (String root : List.of("/", "/workspace/..", "/..")) {
            TextEditor.Outcome view = view(editor, root);
            assertThat(view.error()).as(view.text()).isFalse();
            assertThat(view.text()).as(root).contains("\n/workspace/\n").contains("\n/usr/\n");
        }
        for (String workspace : List.of(".", "/workspace", "/workspace/.")) {
            TextEditor.Outcome view = view(editor, workspace);
            assertThat(view.error()).as(view.text()).isFalse();
            assertThat(view.text()).as(workspace).contains("/workspace/seen.txt");
        }
        TextEditor.Outcome out = view(editor, "..");
        assertThat(out.error()).isTrue();
        assertThat(out.text()).contains("absolutely");
        TextEditor.Outcome create = editor.call(new TextEditor.Call("create", "/workspace/..", "x", null, null, null,
                null, null, null));
        assertThat(create.error()).as(create.text()).isTrue();
    }

    private static TextEditor.Outcome view(TextEditor editor, String path) {
        return editor.call(new TextEditor.Call("view", path, null, null, null, null, null, null, null));
    }
}
