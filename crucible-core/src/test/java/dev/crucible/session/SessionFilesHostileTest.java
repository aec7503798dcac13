package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.workspace.SessionFiles;
import dev.crucible.session.workspace.Workspace;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Every {@code files-*} case of hostile-cases.json against the session file API: the code plants links, FIFOs and
 * swaps in a live session's workspace; the host side must never follow, hang on, or write through them.
 */
class SessionFilesHostileTest {
    static final String ME = "hostile-owner";

    @TempDir
    static Path data;

    static SessionManager sessions;
    SessionInfo session;
    SessionFiles files;

    @BeforeAll
    static void start() throws Exception {
        Crucible c = TestHost.crucible();
        sessions = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data));
    }

    @AfterAll
    static void stop() {
        sessions.close();
    }

    @BeforeEach
    void open() throws Exception {
        session = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null));
        files = sessions.files(ME, session.id());
    }

    @AfterEach
    void close() {
        sessions.delete(ME, session.id());
    }

    /** Runs a case's shell code inside the session (the session language is Python; the case is bash). */
    String bash(String code) throws InterruptedException {
        CellResult r = sessions.execute(ME, session.id(), "import subprocess\nr = subprocess.run(['bash', '-c', "
                + pyString(code) + "], capture_output=True, text=True)\nprint(r.stdout + r.stderr, end='')", null, null);
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
        return r.stdout();
    }

    static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'";
    }

    static String codeOf(String id) throws Exception {
        try (InputStream in = SessionFilesHostileTest.class.getResourceAsStream("/hostile/hostile-cases.json")) {
            for (JsonNode c : JsonMapper.builder().build().readTree(in)) {
                if (c.get("id").asString().equals(id)) {
                    return c.get("code").asString();
                }
            }
        }
        throw new IllegalArgumentException(id);
    }

    static void refusedAsLink(ThrowingRunnable call) {
        assertThatThrownBy(call::run).isInstanceOf(RequestException.class).extracting("code")
                .isEqualTo(ErrorCode.INVALID_FILE);
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void everyFilesCaseIsCoveredHere() throws Exception {
        Set<String> ids = new TreeSet<>();
        try (InputStream in = getClass().getResourceAsStream("/hostile/hostile-cases.json")) {
            for (JsonNode c : JsonMapper.builder().build().readTree(in)) {
                if (c.get("id").asString().startsWith("files-")) {
                    ids.add(c.get("id").asString());
                }
            }
        }
        Set<String> covered = new TreeSet<>();
        for (var m : getClass().getDeclaredMethods()) {
            if (m.getName().startsWith("files")) {
                covered.add(m.getName().replaceAll("([A-Z])", "-$1").toLowerCase(Locale.ROOT));
            }
        }
        assertThat(covered).isEqualTo(ids);
    }

    @Test
    void filesSymlinkToHostFile() throws Exception {
        assertThat(bash(codeOf("files-symlink-to-host-file"))).contains("done");
        refusedAsLink(() -> files.download("result.txt"));
        refusedAsLink(() -> files.download("etcdir/passwd"));
        assertThat(files.list("")).extracting(Workspace.Entry::path, Workspace.Entry::type).contains(
                Tuple.tuple("result.txt", "symlink"),
                Tuple.tuple("etcdir", "symlink"));
        refusedAsLink(() -> files.list("etcdir"));
        // the link itself can be deleted; what it points to is untouched
        files.delete("result.txt");
        assertThat(Path.of("/etc/passwd")).exists();
    }

    @Test
    void filesSymlinkDirEscape() throws Exception {
        bash(codeOf("files-symlink-dir-escape"));
        refusedAsLink(() -> files.download("d/up/etc/hostname"));
        refusedAsLink(() -> files.download("root/etc/hostname"));
        refusedAsLink(() -> files.upload("root/tmp/crucible-escape", "x".getBytes(StandardCharsets.UTF_8)));
        refusedAsLink(() -> files.delete("d/up/etc/hostname"));
        assertThat(Path.of("/tmp/crucible-escape")).doesNotExist();
        assertThat(Path.of("/etc/hostname")).exists();
    }

    @Test
    void filesHardlinkHostFile() throws Exception {
        String out = bash(codeOf("files-hardlink-host-file"));
        assertThat(out).contains("done").containsPattern("Invalid cross-device link|Operation not permitted");
        assertThat(files.list("")).isEmpty();
    }

    @Test
    void filesFifoAndDevice() throws Exception {
        String out = bash(codeOf("files-fifo-and-device"));
        assertThat(out).contains("done").contains("Operation not permitted");
        long start = System.nanoTime();
        assertThatThrownBy(() -> files.download("out.txt")).isInstanceOf(RequestException.class)
                .extracting("code").isEqualTo(ErrorCode.NOT_A_FILE);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5)); // never hangs
        assertThat(files.list("")).extracting(Workspace.Entry::path, Workspace.Entry::type)
                .containsExactly(Tuple.tuple("out.txt", "other"));
        // an upload replaces the FIFO by a regular file instead of writing into it
        files.upload("out.txt", "data".getBytes(StandardCharsets.UTF_8));
        assertThat(files.download("out.txt")).asString(StandardCharsets.UTF_8).isEqualTo("data");
    }

    @Test
    void filesHugeDownload() throws Exception {
        CellResult r = sessions.execute(ME, session.id(), codeOf("files-huge-download"), null, null);
        assertThat(r.stdout()).contains("created");
        assertThatThrownBy(() -> files.download("out.bin")).isInstanceOf(RequestException.class)
                .extracting("code").isEqualTo(ErrorCode.FILE_TOO_LARGE);
        assertThatThrownBy(() -> files.upload("big.bin", new byte[(int) files.maxFileBytes() + 1]))
                .extracting("code").isEqualTo(ErrorCode.FILE_TOO_LARGE);
    }

    @Test
    void filesUploadPathTraversal() {
        assertThatThrownBy(() -> files.upload("../../etc/cron.d/evil", "* * * * * root id".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(RequestException.class).extracting("code").isEqualTo(ErrorCode.INVALID_FILE);
        assertThat(Path.of("/etc/cron.d/evil")).doesNotExist();
        assertThat(files.list("")).isEmpty();
    }

    @Test
    void filesUploadAbsolutePath() throws Exception {
        // the catalogue's other answer: an absolute path is the session's own file system, never the host's
        byte[] before = Files.readAllBytes(Path.of("/etc/passwd"));
        byte[] x = "x".getBytes(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> files.upload("/etc/passwd", x)).as("the session's user may not write its /etc")
                .isInstanceOf(RequestException.class).extracting("code").isEqualTo(ErrorCode.PERMISSION_DENIED);
        assertThat(Files.readAllBytes(Path.of("/etc/passwd"))).isEqualTo(before);
        SessionFiles root = files.as("root");
        try {
            root.upload("/etc/passwd", x);
            assertThat(root.download("/etc/passwd")).as("the session's own /etc/passwd").isEqualTo(x);
        } catch (RequestException e) {
            assertThat(e.code()).as("refused only for a session without a root of its own: " + e.getMessage())
                    .isEqualTo(ErrorCode.INVALID_REQUEST);
        }
        assertThat(Files.readAllBytes(Path.of("/etc/passwd"))).isEqualTo(before);
        assertThat(files.list("")).isEmpty();
    }

    @Test
    void filesUploadWeirdNames() {
        List<String> names = List.of("a\u0000b", "..", "a/../../b", "a\\..\\b", "x/", "\u202etxt.exe",
                "a".repeat(4096), "./a", "a//b");
        for (String name : names) {
            assertThatThrownBy(() -> files.upload(name, new byte[] {1})).as(name)
                    .isInstanceOf(RequestException.class).extracting("code").isEqualTo(ErrorCode.INVALID_FILE);
        }
        for (String workspace : List.of(".", "")) { // the workspace itself: a directory, no file's name
            assertThatThrownBy(() -> files.upload(workspace, new byte[] {1})).as(workspace)
                    .isInstanceOf(RequestException.class).extracting("code").isEqualTo(ErrorCode.NOT_A_FILE);
        }
        assertThat(files.list("")).isEmpty();
        files.upload("CON", new byte[] {1}); // an ordinary name on Linux, kept inside the workspace
        assertThat(files.list("")).extracting(Workspace.Entry::path).containsExactly("CON");
    }

    @Test
    void filesUploadOverPlantedSymlink() throws Exception {
        byte[] hostname = Files.readAllBytes(Path.of("/etc/hostname"));
        bash("ln -s /etc/hostname /workspace/input.txt; ln -s /etc /workspace/etc2");
        files.upload("input.txt", "PWNED".getBytes(StandardCharsets.UTF_8));
        assertThat(Files.readAllBytes(Path.of("/etc/hostname"))).isEqualTo(hostname);
        refusedAsLink(() -> files.upload("etc2/crucible-evil", "PWNED".getBytes(StandardCharsets.UTF_8)));
        assertThat(Path.of("/etc/crucible-evil")).doesNotExist();
        // the link was replaced by a regular file that belongs to the sandbox's user, not to root
        CellResult owner = sessions.execute(ME, session.id(),
                "import os\nst = os.lstat('input.txt')\n(open('input.txt').read(), st.st_uid == os.getuid())", null, null);
        assertThat(owner.result()).isEqualTo("('PWNED', True)");
        Path onHost = data.resolve("sessions").resolve(session.id()).resolve("workspace/input.txt");
        int uid = (int) Files.getAttribute(onHost, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        assertThat(uid).isNotZero();
    }

    @Test
    void filesZipSlipUpload() throws Exception {
        // there is no archive extraction: an archive is stored as the bytes it is, whatever its entries say
        var zip = new ByteArrayOutputStream();
        try (var out = new ZipOutputStream(zip)) {
            for (String entry : List.of("ok.txt", "../../evil.sh", "/abs/evil")) {
                out.putNextEntry(new ZipEntry(entry));
                out.write("x".getBytes(StandardCharsets.UTF_8));
                out.closeEntry();
            }
        }
        files.upload("upload.zip", zip.toByteArray());
        assertThat(files.list("")).extracting(Workspace.Entry::path).containsExactly("upload.zip");
        assertThat(files.download("upload.zip")).isEqualTo(zip.toByteArray());
    }

    @Test
    void filesToctouSwap() throws Exception {
        sessions.execute(ME, session.id(), "import subprocess\nswapper = subprocess.Popen(['bash', '-c', "
                + pyString(codeOf("files-toctou-swap")) + "])", null, null);
        await("the swapper's first link").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                .until(() -> files.list("").stream().anyMatch(e -> e.path().equals("swap")));
        AtomicInteger refused = new AtomicInteger();
        List<String> leaked = new ArrayList<>();
        Map<String, Integer> outcomes = new LinkedHashMap<>();
        for (int i = 0; i < 300; i++) {
            try {
                String got = new String(files.download("swap"), StandardCharsets.UTF_8);
                outcomes.merge("content", 1, Integer::sum);
                if (got.contains("root:")) {
                    leaked.add(got);
                }
            } catch (RequestException e) {
                refused.incrementAndGet();
            }
        }
        sessions.execute(ME, session.id(), "swapper.kill(); swapper.wait()", null, null);
        assertThat(leaked).isEmpty();
        assertThat(refused.get()).isPositive();
    }
}
