package dev.crucible.session.process;

/** A wait status as the supervisor reports it (waitpid's): an exit code, or the signal that killed the process. */
final class WaitStatus {
    private WaitStatus() {}

    /** The exit code, or null when a signal killed it. */
    static Integer exitCode(int status) {
        return (status & 0x7f) != 0 ? null : (status >> 8) & 0xff;
    }

    /** The signal that killed it, or null when it exited. */
    static Integer signal(int status) {
        return (status & 0x7f) != 0 ? status & 0x7f : null;
    }
}
