package dev.crucible.session.workspace;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Where {@link Workspace}'s operations run: on a few platform threads that do nothing else, because the per-thread
 * file-system uid they switch to must not leak into other work; errno becomes the API's error for the path.
 */
final class WorkspaceCalls {
    /** The per-thread file-system uid needs platform threads that do nothing else in between. */
    private static final ExecutorService FILES = Executors.newFixedThreadPool(4, r -> {
        Thread t = new Thread(r, "crucible-files");
        t.setDaemon(true);
        return t;
    });

    private WorkspaceCalls() {}

    /** Runs a file operation on a files thread and maps errno to the API's errors. */
    static <T> T run(Callable<T> task, String path) {
        Future<T> future = FILES.submit(task);
        try {
            return future.get();
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RequestException re) {
                throw re;
            }
            if (cause instanceof ErrnoException ee) {
                throw fromErrno(ee, path);
            }
            if (cause instanceof NoSuchFileException) {
                throw new RequestException(ErrorCode.FILE_NOT_FOUND, "no such file: '" + path + "'");
            }
            if (cause instanceof AccessDeniedException) {
                throw new RequestException(ErrorCode.PERMISSION_DENIED, "the session's user may not do that to '" + path
                        + "'");
            }
            if (DataDirFull.is(cause)) { // a write() that found the workspace's file system full
                throw new RequestException(ErrorCode.QUOTA_EXCEEDED, "no space left for '" + path + "'");
            }
            throw new IllegalStateException("file operation on '" + path + "' failed: " + cause, cause);
        }
    }

    private static RuntimeException fromErrno(ErrnoException e, String path) {
        return switch (e.errno()) {
            case Linux.ENOENT -> new RequestException(ErrorCode.FILE_NOT_FOUND, "no such file: '" + path + "'");
            case Linux.ELOOP -> new RequestException(ErrorCode.INVALID_FILE, "'" + path
                    + "' is or goes through a symbolic link that is not followed (in the workspace, none is)");
            case Linux.EXDEV -> new RequestException(ErrorCode.INVALID_FILE, "'" + path + "' crosses a boundary: a"
                    + " link or '..' out of its root, or a move between two of the session's file systems");
            case Linux.ENOTDIR -> new RequestException(ErrorCode.INVALID_FILE, "a component of '" + path
                    + "' is not a directory (symbolic links are never followed)");
            case Linux.EISDIR -> new RequestException(ErrorCode.NOT_A_FILE, "'" + path + "' is a directory");
            case Linux.ENOTEMPTY -> new RequestException(ErrorCode.NOT_A_FILE, "'" + path
                    + "' kept changing while it was deleted; try again");
            case 13, 1 -> new RequestException(ErrorCode.PERMISSION_DENIED, "the session's user may not do that to '"
                    + path + "'");
            case 30 -> new RequestException(ErrorCode.PERMISSION_DENIED, "'" + path + "' is on a read-only file system:"
                    + " a session without a root of its own writes only /workspace and /tmp");
            case 28, 122 -> new RequestException(ErrorCode.QUOTA_EXCEEDED, "no space left for '" + path + "'");
            default -> new RequestException(ErrorCode.FILE_ERROR, "cannot access '" + path + "' (errno " + e.errno() + ")");
        };
    }
}
