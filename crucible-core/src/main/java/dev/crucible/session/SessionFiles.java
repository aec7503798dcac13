package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.edit.EditFiles;
import dev.crucible.session.workspace.Workspace;
import java.util.List;

/** The files of one session, with the download cap and the workspace quota applied. */
public final class SessionFiles {
    private final Workspace workspace;
    private final long maxFileBytes;
    private final long quota;

    SessionFiles(Workspace workspace, long maxFileBytes, long quota) {
        this.workspace = workspace;
        this.maxFileBytes = maxFileBytes;
        this.quota = quota;
    }

    /** The largest upload or download, in bytes. */
    public long maxFileBytes() {
        return maxFileBytes;
    }

    /**
     * Writes a file (replacing it atomically), creating missing directories.
     *
     * @throws RequestException {@code file_too_large} past the cap, {@code quota_exceeded} past the quota
     */
    public void upload(String path, byte[] data) {
        if (data.length > maxFileBytes) {
            throw new RequestException(ErrorCode.FILE_TOO_LARGE, "the file has " + data.length + " bytes; uploads are capped at "
                    + maxFileBytes);
        }
        long used = workspace.usage();
        if (used + data.length > quota) {
            throw new RequestException(ErrorCode.QUOTA_EXCEEDED, "the workspace holds " + used + " bytes; with this file it"
                    + " would pass its quota of " + quota);
        }
        workspace.write(path, data);
    }

    public byte[] download(String path) {
        return workspace.read(path, maxFileBytes);
    }

    public List<Workspace.Entry> list(String directory) {
        return workspace.list(directory);
    }

    public void delete(String path) {
        workspace.delete(path);
    }

    /** These files as the editing tools (Anthropic's text editor, OpenAI's apply_patch) work on them. */
    public EditFiles forEditing() {
        return new EditFiles() {
            @Override
            public byte[] read(String path) {
                return download(path);
            }

            @Override
            public void write(String path, byte[] data) {
                upload(path, data);
            }

            @Override
            public void delete(String path) {
                SessionFiles.this.delete(path);
            }

            @Override
            public List<Entry> list(String path) {
                return SessionFiles.this.list(path).stream()
                        .map(e -> new Entry(e.path(), e.type().equals("directory"))).toList();
            }
        };
    }

    /** Bytes in the workspace's regular files. */
    public long usage() {
        return workspace.usage();
    }
}
