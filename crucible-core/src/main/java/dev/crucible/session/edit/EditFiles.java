package dev.crucible.session.edit;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The files an editor works on (a session's), by paths relative to its {@code /workspace} or absolute.
 * Implementations apply their own path rules, caps and quota, and throw {@link dev.crucible.error.RequestException}
 * ({@code file_not_found}, {@code not_a_file}, {@code invalid_file}, {@code quota_exceeded}…) when refused.
 */
public interface EditFiles {
    /** The bytes of the regular file at {@code path}. */
    byte[] read(String path);

    /**
     * The text of the file at {@code path}, which must be UTF-8.
     *
     * @throws PatchException for a file that is not UTF-8 text
     */
    default String readText(String path) {
        byte[] bytes = read(path);
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new PatchException("Error: " + EditPaths.shown(path) + " is a binary file of " + bytes.length
                    + " bytes, not UTF-8 text; only text files can be edited");
        }
    }

    /** Writes the file at {@code path}, replacing it atomically and creating missing directories. */
    void write(String path, byte[] data);

    /** Deletes the file at {@code path}. */
    void delete(String path);

    /** The entries of the directory at {@code path} ({@code ""}: the top), each with its path from the top. */
    List<Entry> list(String path);

    /** One entry of a directory: its path from the top, and whether it is a directory. */
    record Entry(String path, boolean directory) {}
}
