package dev.crucible.server.desktop;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.SessionManager;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A session's desktop, all of it run as the session's commands and processes (its sandbox, its user, its network
 * namespace): Xvfb on display {@code :0} (its socket abstract, so only the session's namespace reaches it), XFCE,
 * x11vnc on 5900 and noVNC on 6080 (reached from outside only through the authenticated ports proxy); screenshots with
 * scrot, input with xdotool. Nothing runs on the host.
 */
public final class Desktops {
    /** The session's display. */
    public static final String DISPLAY = ":0";
    /** x11vnc's port inside the session. */
    public static final int VNC_PORT = 5900;
    /** noVNC's port inside the session: {@code /v1/sessions/{id}/ports/6080/vnc.html}. */
    public static final int NOVNC_PORT = 6080;
    private static final String SHOT = "/tmp/.crucible-screenshot.png";
    private static final Pattern GEOMETRY = Pattern.compile("(\\d+) (\\d+)");
    private static final Pattern LOCATION = Pattern.compile("X=(\\d+)\\s+Y=(\\d+)");

    private final SessionManager sessions;

    public Desktops(SessionManager sessions) {
        this.sessions = sessions;
    }

    /**
     * The body of {@code POST /v1/sessions/{id}/desktop}; each field has a default.
     *
     * @param width the screen's width in pixels (320 to 3840; 1024)
     * @param height the screen's height in pixels (240 to 2160; 768)
     * @param dpi dots per inch (48 to 384; 96)
     */
    public record Spec(@JsonProperty("width") Integer width, @JsonProperty("height") Integer height,
            @JsonProperty("dpi") Integer dpi) {}

    /**
     * A started desktop.
     *
     * @param display the X display inside the session
     * @param width the screen's width
     * @param height the screen's height
     * @param vncPort x11vnc's port inside the session
     * @param novncPort noVNC's port inside the session (its page: {@code /v1/sessions/{id}/ports/6080/vnc.html})
     */
    public record Info(@JsonProperty("display") String display, @JsonProperty("width") int width,
            @JsonProperty("height") int height, @JsonProperty("vnc_port") int vncPort,
            @JsonProperty("novnc_port") int novncPort) {}

    /**
     * Starts session {@code id}'s desktop: its root made ready, Xvfb (waited for), XFCE, x11vnc and noVNC.
     *
     * @throws RequestException {@code invalid_request} for a size out of range or a display already up,
     *     {@code runtime_unavailable} (saying why) where a desktop cannot run
     */
    public Info start(String owner, String id, Spec spec) throws InterruptedException {
        int width = within("width", spec == null ? null : spec.width(), 1024, 320, 3840);
        int height = within("height", spec == null ? null : spec.height(), 768, 240, 2160);
        int dpi = within("dpi", spec == null ? null : spec.dpi(), 96, 48, 384);
        DesktopRoot.prepare(sessions, owner, id);
        if (run(owner, id, List.of("xdpyinfo", "-display", DISPLAY)).exitCode() == 0) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "this session's desktop is already running");
        }
        background(owner, id, "Xvfb " + DISPLAY + " -screen 0 " + width + "x" + height + "x24 -dpi " + dpi
                + " -nolisten tcp -nolisten unix >/tmp/xvfb.log 2>&1");
        long end = System.nanoTime() + 20_000_000_000L;
        while (run(owner, id, List.of("xdpyinfo", "-display", DISPLAY)).exitCode() != 0) {
            if (System.nanoTime() > end) {
                throw new RequestException(ErrorCode.RUNTIME_UNAVAILABLE, "Xvfb did not start within 20 s: "
                        + run(owner, id, List.of("cat", "/tmp/xvfb.log")).stdout().strip());
            }
            Thread.sleep(50); // Xvfb's start is outside this server: its display is polled
        }
        background(owner, id, "startxfce4 >/tmp/xfce.log 2>&1");
        background(owner, id, "x11vnc -display " + DISPLAY + " -forever -shared -localhost -nopw -quiet -rfbport "
                + VNC_PORT + " >/tmp/x11vnc.log 2>&1");
        background(owner, id, "/usr/share/novnc/utils/novnc_proxy --vnc localhost:" + VNC_PORT + " --listen "
                + NOVNC_PORT + " >/tmp/novnc.log 2>&1");
        return new Info(DISPLAY, width, height, VNC_PORT, NOVNC_PORT);
    }

    /** A PNG of session {@code id}'s screen, shot by scrot inside it. */
    public byte[] screenshot(String owner, String id) throws InterruptedException {
        CommandResult shot = run(owner, id, List.of("scrot", "--overwrite", "--pointer", SHOT));
        if (shot.exitCode() == null || shot.exitCode() != 0) {
            throw notRunning(shot);
        }
        return sessions.files(owner, id).download(SHOT);
    }

    /** Does {@code actions} in order on session {@code id}'s display; the first that fails ends the list (a 4xx). */
    public DesktopAction.Results act(String owner, String id, List<DesktopAction> actions) throws InterruptedException {
        if (actions == null || actions.isEmpty() || actions.size() > 100) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "\"actions\" is a list of 1 to 100 actions");
        }
        int[] screen = screen(owner, id);
        List<List<String>> argvs = new ArrayList<>();
        for (DesktopAction a : actions) {
            argvs.add(XdoArgs.of(a, screen[0], screen[1])); // all checked before any is done
        }
        List<DesktopAction.Result> results = new ArrayList<>();
        for (int i = 0; i < actions.size(); i++) {
            String name = actions.get(i).action();
            CommandResult done = run(owner, id, argvs.get(i));
            if (done.exitCode() == null || done.exitCode() != 0) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "action " + i + " (" + name + ") failed: "
                        + done.stderr().strip());
            }
            results.add(switch (name) {
                case "cursor_position" -> {
                    Matcher m = LOCATION.matcher(done.stdout());
                    yield m.find() ? new DesktopAction.Result(name, Integer.parseInt(m.group(1)),
                            Integer.parseInt(m.group(2)), null, null) : DesktopAction.Result.done(name);
                }
                case "screen_size" -> new DesktopAction.Result(name, null, null, screen[0], screen[1]);
                default -> DesktopAction.Result.done(name);
            });
        }
        return new DesktopAction.Results(results);
    }

    private int[] screen(String owner, String id) throws InterruptedException {
        CommandResult geometry = run(owner, id, List.of("xdotool", "getdisplaygeometry"));
        Matcher m = GEOMETRY.matcher(geometry.stdout());
        if (geometry.exitCode() == null || geometry.exitCode() != 0 || !m.find()) {
            throw notRunning(geometry);
        }
        return new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))};
    }

    private static RequestException notRunning(CommandResult r) {
        return new RequestException(ErrorCode.NOT_FOUND, "this session has no desktop running (POST"
                + " /v1/sessions/{id}/desktop starts one): " + r.stderr().strip());
    }

    private CommandResult run(String owner, String id, List<String> argv) throws InterruptedException {
        return sessions.command(owner, id, new CommandRequest(null, argv, Map.of("DISPLAY", DISPLAY), null, 30_000L,
                null, null, false));
    }

    private void background(String owner, String id, String line) throws InterruptedException {
        sessions.processes(owner, id).start(new CommandRequest(line, null, Map.of("DISPLAY", DISPLAY), null, null,
                null, null, true));
    }

    private static int within(String name, Integer value, int fallback, int min, int max) {
        int v = value == null ? fallback : value;
        if (v < min || v > max) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, name + " is " + min + " to " + max + ", got " + v);
        }
        return v;
    }
}
