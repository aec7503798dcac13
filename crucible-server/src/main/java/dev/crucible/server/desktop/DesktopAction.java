package dev.crucible.server.desktop;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * One input action, in Anthropic's {@code computer} tool's vocabulary ({@code computer_20250124}): {@code key},
 * {@code type}, {@code mouse_move}, {@code left_click}, {@code right_click}, {@code middle_click},
 * {@code double_click}, {@code triple_click}, {@code left_click_drag}, {@code left_mouse_down}, {@code left_mouse_up},
 * {@code scroll}, {@code hold_key}, {@code wait}, {@code cursor_position}; and {@code screen_size}. A click's
 * {@code text} holds the keys held while it clicks ({@code "shift"}, {@code "ctrl+alt"}), as Anthropic's does.
 *
 * @param action what to do
 * @param coordinate {@code [x, y]} in the screen's pixels: where to move, click or scroll (a click without it clicks
 *     where the pointer is)
 * @param startCoordinate {@code [x, y]} where a {@code left_click_drag} starts
 * @param text the keys of {@code key} and {@code hold_key} (xdotool's names, {@code "ctrl+s"}, {@code "Return"}), the
 *     text of {@code type}, the modifiers held by a click or scroll
 * @param scrollDirection {@code up}, {@code down}, {@code left} or {@code right}
 * @param scrollAmount wheel clicks (1 to 100; 1 when left out)
 * @param duration seconds of {@code wait} and {@code hold_key} (at most 60)
 */
public record DesktopAction(
        @JsonProperty("action") String action,
        @JsonProperty("coordinate") List<Integer> coordinate,
        @JsonProperty("start_coordinate") List<Integer> startCoordinate,
        @JsonProperty("text") String text,
        @JsonProperty("scroll_direction") String scrollDirection,
        @JsonProperty("scroll_amount") Integer scrollAmount,
        @JsonProperty("duration") Double duration) {

    /** The body of {@code POST /v1/sessions/{id}/desktop/actions}: done in order, the first failure ends the list. */
    public record Batch(@JsonProperty("actions") List<DesktopAction> actions) {}

    /**
     * What an action reported: the pointer after {@code cursor_position}, the screen after {@code screen_size}, nothing
     * else (the other fields left out).
     *
     * @param action the action done
     * @param x the pointer's x, or null
     * @param y the pointer's y, or null
     * @param width the screen's width, or null
     * @param height the screen's height, or null
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Result(@JsonProperty("action") String action, @JsonProperty("x") Integer x,
            @JsonProperty("y") Integer y, @JsonProperty("width") Integer width,
            @JsonProperty("height") Integer height) {
        static Result done(String action) {
            return new Result(action, null, null, null, null);
        }
    }

    /** The answer: one result per action, in order. */
    public record Results(@JsonProperty("results") List<Result> results) {}
}
