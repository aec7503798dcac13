package dev.crucible.server.desktop;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A {@link DesktopAction} as the argv of one {@code xdotool} run inside the session (never a shell: the text an agent
 * types is an argument, not a command line), checked first: a bad action is a 400 naming the field.
 */
final class XdoArgs {
    private static final Map<String, String> BUTTONS = Map.of("left_click", "1", "middle_click", "2",
            "right_click", "3", "double_click", "1", "triple_click", "1");
    private static final Map<String, String> WHEEL = Map.of("up", "4", "down", "5", "left", "6", "right", "7");
    private static final int MAX_TEXT = 10_000;

    private XdoArgs() {}

    /** The xdotool argv of {@code a} on a {@code width}×{@code height} screen; empty for a {@code wait}. */
    static List<String> of(DesktopAction a, int width, int height) {
        if (a == null || a.action() == null) {
            throw bad("each action needs \"action\" (left_click, type, key, mouse_move, scroll, …)");
        }
        List<String> argv = new ArrayList<>(List.of("xdotool"));
        switch (a.action()) {
            case "mouse_move" -> move(argv, required(a.coordinate(), "coordinate", a.action()), width, height);
            case "left_click", "right_click", "middle_click", "double_click", "triple_click" -> {
                if (a.coordinate() != null) {
                    move(argv, a.coordinate(), width, height);
                }
                modifiers(argv, a.text(), "keydown");
                int count = a.action().equals("double_click") ? 2 : a.action().equals("triple_click") ? 3 : 1;
                argv.addAll(List.of("click", "--repeat", Integer.toString(count), BUTTONS.get(a.action())));
                modifiers(argv, a.text(), "keyup");
            }
            case "left_click_drag" -> {
                move(argv, required(a.startCoordinate(), "start_coordinate", a.action()), width, height);
                argv.addAll(List.of("mousedown", "1"));
                move(argv, required(a.coordinate(), "coordinate", a.action()), width, height);
                argv.addAll(List.of("mouseup", "1"));
            }
            case "left_mouse_down" -> argv.addAll(List.of("mousedown", "1"));
            case "left_mouse_up" -> argv.addAll(List.of("mouseup", "1"));
            case "scroll" -> {
                if (a.coordinate() != null) {
                    move(argv, a.coordinate(), width, height);
                }
                String button = WHEEL.get(String.valueOf(a.scrollDirection()));
                if (button == null) {
                    throw bad("scroll needs \"scroll_direction\": up, down, left or right");
                }
                int amount = a.scrollAmount() == null ? 1 : a.scrollAmount();
                if (amount < 1 || amount > 100) {
                    throw bad("scroll_amount is 1 to 100, got " + amount);
                }
                modifiers(argv, a.text(), "keydown");
                argv.addAll(List.of("click", "--repeat", Integer.toString(amount), button));
                modifiers(argv, a.text(), "keyup");
            }
            case "type" -> argv.addAll(List.of("type", "--delay", "12", "--", text(a)));
            case "key" -> { // "ctrl+s", or chords one after another: "ctrl+a Delete"
                argv.addAll(List.of("key", "--"));
                argv.addAll(List.of(text(a).strip().split("\\s+")));
            }
            case "hold_key" -> argv.addAll(List.of("keydown", "--", text(a), "sleep", seconds(a), "keyup", "--",
                    text(a)));
            case "wait" -> argv.addAll(List.of("sleep", seconds(a)));
            case "cursor_position" -> argv.addAll(List.of("getmouselocation", "--shell"));
            case "screen_size" -> argv.add("getdisplaygeometry");
            default -> throw bad("unknown action '" + a.action() + "': one of key, type, mouse_move, left_click,"
                    + " right_click, middle_click, double_click, triple_click, left_click_drag, left_mouse_down,"
                    + " left_mouse_up, scroll, hold_key, wait, cursor_position, screen_size");
        }
        return argv;
    }

    private static void move(List<String> argv, List<Integer> at, int width, int height) {
        if (at.size() != 2 || at.get(0) == null || at.get(1) == null || at.get(0) < 0 || at.get(1) < 0
                || at.get(0) >= width || at.get(1) >= height) {
            throw bad("a coordinate is [x, y] within the " + width + "x" + height + " screen, got " + at);
        }
        argv.addAll(List.of("mousemove", "--sync", at.get(0).toString(), at.get(1).toString()));
    }

    private static void modifiers(List<String> argv, String keys, String how) {
        if (keys != null && !keys.isBlank()) {
            argv.addAll(List.of(how, "--", checked(keys)));
        }
    }

    private static List<Integer> required(List<Integer> at, String field, String action) {
        if (at == null) {
            throw bad(action + " needs \"" + field + "\": [x, y]");
        }
        return at;
    }

    private static String text(DesktopAction a) {
        if (a.text() == null || a.text().isEmpty()) {
            throw bad(a.action() + " needs \"text\"");
        }
        return checked(a.text());
    }

    private static String checked(String text) {
        if (text.length() > MAX_TEXT || text.indexOf('\0') >= 0) {
            throw bad("text is at most " + MAX_TEXT + " characters, without NUL");
        }
        return text;
    }

    private static String seconds(DesktopAction a) {
        double d = a.duration() == null ? -1 : a.duration();
        if (!(d >= 0 && d <= 60)) {
            throw bad(a.action() + " needs \"duration\": 0 to 60 seconds");
        }
        return Double.toString(d);
    }

    private static RequestException bad(String message) {
        return new RequestException(ErrorCode.INVALID_REQUEST, message);
    }
}
