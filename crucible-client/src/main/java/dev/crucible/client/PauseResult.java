package dev.crucible.client;

/**
 * What pausing or resuming a session answers ({@link CrucibleClient#pause}, {@link CrucibleClient#resume}).
 *
 * @param state {@code paused}, or {@code running} after a resume
 * @param keeps after a pause, what a resume brings back: {@code memory} (behind gVisor), {@code replay} or
 *     {@code files}
 * @param restored after a resume, what came back (the same words); null when the session was not paused
 * @param replayed after a resume by replay, how many logged cells ran ok
 */
public record PauseResult(String id, String state, String keeps, String restored, Integer replayed, long tookMs) {}
