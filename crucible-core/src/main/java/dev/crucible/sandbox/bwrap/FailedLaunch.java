package dev.crucible.sandbox.bwrap;

import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
/** A launch that failed before a process existed: completing it reports {@code why} as the sandbox error. */
record FailedLaunch(String why) implements Sandbox.Launch {

    /** The result of a run the sandbox itself failed: no exit code, no output, {@code why} as the sandbox error. */
    static SandboxResult result(String why) {
        return result(why, 0);
    }

    /** As {@link #result(String)}, for a sandbox that was there for {@code wallMs}. */
    static SandboxResult result(String why, long wallMs) {
        return new SandboxResult(-1, null, new byte[0], new byte[0], false, false, wallMs, -1, -1, false, false, false,
                why);
    }

    /** The result of a run whose program the sandbox never took: {@code why}, and safe to run again elsewhere. */
    static SandboxResult neverRan(SandboxResult.Untaken untaken, String why, long wallMs) {
        return new SandboxResult(-1, null, new byte[0], new byte[0], false, false, wallMs, -1, -1, false, false, false,
                why, untaken);
    }

    @Override
    public SandboxResult complete(byte[] stdin, Limits limits, OutputListener listener) {
        return result(why);
    }

    @Override
    public Readiness readiness() {
        return Readiness.ENDED;
    }

    @Override
    public Readiness awaitReady(long millis) {
        return Readiness.ENDED;
    }

    @Override
    public void abandon() {
        // nothing was started
    }
}
