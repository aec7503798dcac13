package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The files API on a session's whole file system (issue 27 item 1), against the real server and sandbox: any absolute
 * path is the sandbox's, resolved inside its root (a link, however it is spelt, never leads to the host's files; a
 * magic link and the kernel's file systems are refused), as the session's user or, asked for, its root; {@code
 * /workspace} and relative paths stay the workspace's.
 */
class SessionRootFilesTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String MARK = "crucible-root-files-" + ProcessHandle.current().pid();
    /** A file of the host's at a path the sandbox also has (its own /root): it must never be the one reached. */
    private static final Path HOST_SECRET = Path.of("/root", MARK);

    private static CrucibleServer server;
    private static ServerConfig config;
    private static Http http;
    private static String id;

    @BeforeAll
    static void start() throws Exception {
        config = Http.config().withPort(0).withPool(Map.of());
        server = CrucibleServer.start(config, TestHost.crucible());
        http = Http.to(server, null);
        id = SessionApiTest.json(http.postJson("/v1/sessions", "{\"language\": \"python\"}")).get("id").asString();
        Files.writeString(HOST_SECRET, "the host's\n");
    }

    @AfterAll
    static void stop() throws Exception {
        Files.deleteIfExists(HOST_SECRET);
        if (server != null) {
            server.close();
        }
    }

    private static boolean rooted() {
        return Files.isDirectory(config.sessions().dataDir().resolve("sessions").resolve(id).resolve("disk"));
    }

    private static String files(String path, String user) {
        return "/v1/sessions/" + id + "/files?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8)
                + (user == null ? "" : "&user=" + user);
    }

    private static String run(String user, String line) throws Exception {
        HttpResponse<String> r = http.postJson("/v1/sessions/" + id + "/commands", JSON.writeValueAsString(
                user == null ? Map.of("command", line) : Map.of("command", line, "user", user)));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return SessionApiTest.json(r).get("stdout").asString();
    }

    private static void assertError(HttpResponse<String> r, int status, String code) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        assertThat(SessionApiTest.json(r).get("error").get("code").asString()).as(r.body()).isEqualTo(code);
    }

    @Test
    void anAbsolutePathIsTheSandboxsAndRootWritesWhatTheUserMayNot() throws Exception {
        Capability.SESSION_ROOTS.require(rooted() ? null : "this host gives sessions no root of their own (not root, no loop mounts)");
        byte[] conf = "port = 8080\n".getBytes(StandardCharsets.UTF_8);
        assertError(http.put(files("/etc/app.conf", null), conf), 403, "permission_denied");
        HttpResponse<String> put = http.put(files("/etc/app.conf", "root"), conf);
        assertThat(put.statusCode()).as(put.body()).isEqualTo(201);
        assertThat(run(null, "cat /etc/app.conf; stat -c %u /etc/app.conf")).isEqualTo("port = 8080\n0\n");

        assertThat(http.put(files("/home/user/notes.txt", null), "mine\n".getBytes()).statusCode()).isEqualTo(201);
        assertThat(run(null, "stat -c %u /home/user/notes.txt")).as("the user's file is the user's").isEqualTo("1000\n");
        assertThat(http.put(files("/opt/tool/bin/run", "root"), "#!/bin/sh\n".getBytes()).statusCode())
                .as("missing directories are made").isEqualTo(201);
        assertThat(run(null, "cat /opt/tool/bin/run")).isEqualTo("#!/bin/sh\n");

        run("root", "echo from-usr > /usr/local/" + MARK);
        assertThat(new String(http.bytes(files("/usr/local/" + MARK, null)).body())).isEqualTo("from-usr\n");
        assertThat(Path.of("/usr/local", MARK)).as("the host's /usr is untouched").doesNotExist();

        JsonNode listing = SessionApiTest.json(http.get("/v1/sessions/" + id + "/files?dir=%2F"));
        assertThat(StreamSupport.stream(listing.get("files").spliterator(), false).map(f -> f.get("path").asString()))
                .contains("/etc", "/usr", "/workspace", "/home", "/tmp");

        assertError(http.delete(files("/etc/app.conf", null)), 403, "permission_denied");
        assertThat(http.delete(files("/etc/app.conf", "root")).statusCode()).isEqualTo(200);
        assertThat(run(null, "test -e /etc/app.conf || echo gone")).isEqualTo("gone\n");
    }

    @Test
    void noLinkLeadsOutOfTheSandboxsRoot() throws Exception {
        Capability.SESSION_ROOTS.require(rooted() ? null : "this host gives sessions no root of their own (not root, no loop mounts)");
        run("root", String.join("; ",
                "echo the-sessions > /root/" + MARK,
                "ln -sf /root/" + MARK + " /home/user/absolute",
                "ln -sf ../../../../../../../../root/" + MARK + " /home/user/climbing",
                "ln -sf /proc/1/root/root/" + MARK + " /home/user/magic",
                "ln -sf /proc/1/root /home/user/magicdir",
                "mkfifo /tmp/" + MARK + ".fifo"));
        // a link resolves as it does inside: to the session's /root, never the host's
        assertThat(new String(http.bytes(files("/home/user/absolute", "root")).body())).isEqualTo("the-sessions\n");
        assertThat(new String(http.bytes(files("/home/user/climbing", "root")).body())).isEqualTo("the-sessions\n");
        assertThat(new String(http.bytes(files("/root/" + MARK, "root")).body())).isEqualTo("the-sessions\n");
        assertError(http.get(files("/home/user/magic", "root")), 400, "invalid_file");
        assertError(http.get("/v1/sessions/" + id + "/files?user=root&dir=%2Fhome%2Fuser%2Fmagicdir"), 400,
                "invalid_file");
        assertThat(new String(http.bytes(files("/../../root/" + MARK, "root")).body()))
                .as("'..' stops at the sandbox's root, as the kernel resolves it").isEqualTo("the-sessions\n");
        assertError(http.get(files("/proc/1/status", "root")), 400, "not_a_file");
        assertError(http.get(files("/proc/1/environ", "root")), 400, "not_a_file");
        assertError(http.get(files("/tmp/" + MARK + ".fifo", null)), 400, "not_a_file");
        // a terminal of the session's own: never opened by the server (no controlling terminal can be taken)
        HttpResponse<String> holder = http.postJson("/v1/sessions/" + id + "/commands", JSON.writeValueAsString(Map.of(
                "command", "python3 -c 'import os, time; m, s = os.openpty(); print(os.ttyname(s), flush=True);"
                        + " time.sleep(60)'", "background", true)));
        assertThat(holder.statusCode()).as(holder.body()).isEqualTo(201);
        String output = "/v1/sessions/" + id + "/processes/" + SessionApiTest.json(holder).get("pid").asLong()
                + "/output?wait_ms=5000";
        String pts = "";
        for (int turns = 0; turns < 12 && !pts.endsWith("\n"); turns++) {
            pts = SessionApiTest.json(http.get(output)).get("stdout").asString();
        }
        pts = pts.strip();
        assertThat(pts).startsWith("/dev/pts/");
        assertError(http.get(files(pts, null)), 400, "not_a_file");
        // what the user may not list, it is not told: root's home is root's
        assertError(http.get("/v1/sessions/" + id + "/files?dir=%2Froot"), 403, "permission_denied");
        assertThat(http.get("/v1/sessions/" + id + "/files?dir=%2Froot&user=root").statusCode()).isEqualTo(200);
        assertError(http.put(files("/proc/1/" + MARK, "root"), "x".getBytes()), 400, "not_a_file");
        assertThat(Files.readString(HOST_SECRET)).isEqualTo("the host's\n");
    }

    /** docs/sessions.md's "read any file": the host's /usr is the sandbox's; its /etc is its own (no os-release). */
    @Test
    void theDocsReadAnyFileExampleReadsTheSandboxsUsr() throws Exception {
        HttpResponse<byte[]> release = http.bytes(files("/usr/lib/os-release", null));
        assertThat(release.statusCode()).isEqualTo(200);
        assertThat(new String(release.body(), StandardCharsets.UTF_8))
                .isEqualTo(Files.readString(Path.of("/usr/lib/os-release")));
        assertError(http.get(files("/etc/os-release", null)), 404, "file_not_found");
    }

    @Test
    void theWorkspaceIsTheSameByEitherName() throws Exception {
        assertThat(http.put(files("/workspace/both.txt", null), "one\n".getBytes()).statusCode()).isEqualTo(201);
        assertThat(new String(http.bytes("/v1/sessions/" + id + "/files/both.txt").body())).isEqualTo("one\n");
        JsonNode listing = SessionApiTest.json(http.get("/v1/sessions/" + id + "/files?dir=%2Fworkspace"));
        assertThat(StreamSupport.stream(listing.get("files").spliterator(), false).map(f -> f.get("path").asString()))
                .contains("/workspace/both.txt");
        assertError(http.get("/v1/sessions/" + id + "/files?path=%2Fworkspace%2Fnone"), 404, "file_not_found");
        assertError(http.put("/v1/sessions/" + id + "/files?path=", "x".getBytes()), 400, "invalid_request");
        assertError(http.put(files("/etc/a\u0001b", "root"), "x".getBytes()), 400, "invalid_file");
        assertError(http.get(files("/etc/hosts", "admin")), 400, "invalid_request");
    }

    @Test
    void theRootIsADirectoryHoweverItIsSpeltAndDotDotStaysInside() throws Exception {
        List<String> root = listed("/");
        assertThat(root).contains("/workspace", "/usr", "/tmp");
        assertThat(listed("/workspace/..")).isEqualTo(root);
        assertThat(listed("/../..")).isEqualTo(root);
        assertThat(http.put("/v1/sessions/" + id + "/files/dotted.txt", "x".getBytes()).statusCode()).isEqualTo(201);
        assertThat(listed(".")).isEqualTo(listed("")).contains("dotted.txt");
        assertError(http.get("/v1/sessions/" + id + "/files?dir=.."), 400, "invalid_file");
        assertError(http.get(files("/", null)), 400, "not_a_file");
        assertError(http.get(files("/workspace/..", null)), 400, "not_a_file");
        assertError(http.put(files("/", null), "x".getBytes()), 400, "not_a_file");
        assertError(http.delete(files("/workspace/..", null)), 400, "not_a_file");
        assertError(http.delete(files(".", null)), 400, "not_a_file");
        assertThat(http.put(files("/tmp/" + MARK, null), "in\n".getBytes()).statusCode()).isEqualTo(201);
        assertThat(new String(http.bytes(files("/workspace/../../../tmp/" + MARK, null)).body())).isEqualTo("in\n");
        assertThat(Path.of("/tmp", MARK)).as("the host's /tmp is not the session's").doesNotExist();
    }

    private static List<String> listed(String dir) throws Exception {
        HttpResponse<String> r = http.get("/v1/sessions/" + id + "/files?dir=" + URLEncoder.encode(dir,
                StandardCharsets.UTF_8));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return StreamSupport.stream(SessionApiTest.json(r).get("files").spliterator(), false)
                .map(f -> f.get("path").asString()).toList();
    }
}
