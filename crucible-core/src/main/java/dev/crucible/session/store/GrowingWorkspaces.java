package dev.crucible.session.store;

import dev.crucible.session.workspace.WorkspaceDisk;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Whose workspace grows: the number of every session made, mounted again or recorded by a {@link SessionStore}, by id
 * (the name of its directory), so a grow of a session's workspace is admitted for that number (and so its owner), and
 * what each number's workspace holds is known. Thread-safe.
 */
final class GrowingWorkspaces {
    private final Map<String, Integer> numbers = new ConcurrentHashMap<>();

    void put(String id, int number) {
        numbers.put(id, number);
    }

    void remove(String id) {
        numbers.remove(id);
    }

    /** {@code grows} as the disk asks it: by session directory; a directory of no session (a probe) never grows. */
    WorkspaceDisk.Growth byDirectory(SessionStore.Grows grows) {
        return new WorkspaceDisk.Growth() {
            @Override
            public boolean take(Path sessionDir, long bytes) {
                Integer number = numbers.get(sessionDir.getFileName().toString());
                return number != null && grows.take(number, bytes);
            }

            @Override
            public void done(Path sessionDir, long bytes) {
                Integer number = numbers.get(sessionDir.getFileName().toString());
                if (number != null) {
                    grows.done(number, bytes);
                }
            }
        };
    }

    /** What each session's workspace holds, by number (null: its quota whole), {@code disk} asked for each. */
    Map<Integer, WorkspaceDisk.Allocation> allocations(WorkspaceDisk disk, SessionStore store) {
        Map<Integer, WorkspaceDisk.Allocation> by = new HashMap<>();
        numbers.forEach((id, number) -> by.put(number, disk.allocation(store.dir(id))));
        return by;
    }
}
