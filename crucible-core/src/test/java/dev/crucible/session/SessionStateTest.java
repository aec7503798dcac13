package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.session.Session.State;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** The moves of a session's life that {@link Session#transition} allows: nothing back from GONE, none into DORMANT. */
class SessionStateTest {
    @Test
    void aGoneSessionNeverComesBackAndOnlyALoadedOneIsDormant() {
        for (State from : State.values()) {
            for (State to : State.values()) {
                boolean allowed = from.mayBecome(to);
                if (from == State.GONE) {
                    assertThat(allowed).as(from + " -> " + to).isEqualTo(to == State.GONE);
                } else {
                    assertThat(allowed).as(from + " -> " + to).isEqualTo(to != State.DORMANT);
                }
            }
        }
        assertThat(EnumSet.allOf(State.class).stream().filter(s -> s.mayBecome(State.LIVE)))
                .containsExactlyInAnyOrder(State.DORMANT, State.PAUSED, State.LIVE, State.BROKEN);
    }
}
