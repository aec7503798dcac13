package dev.crucible.session.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A session's cell log ({@code cells.jsonl}): one JSON line per successful cell, for replay. */
final class CellLog {
    private CellLog() {}

    /** Appends {@code line} to {@code log}; a line the disk cut short is taken back, so the next does not continue it. */
    static void append(Path log, byte[] line) throws IOException {
        try (FileChannel out = FileChannel.open(log, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            long end = out.size();
            ByteBuffer bytes = ByteBuffer.wrap(line);
            try {
                while (bytes.hasRemaining()) {
                    out.write(bytes, end + bytes.position());
                }
            } catch (IOException e) {
                out.truncate(end);
                throw e;
            }
        }
    }

    /** The cells logged in {@code log} in order; a line cut by a kill is skipped, a log that cannot be read is none. */
    static List<SessionStore.Cell> read(Path log, JsonMapper json) {
        List<String> lines;
        try {
            lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
        } catch (IOException e) {
            return List.of();
        }
        List<SessionStore.Cell> cells = new ArrayList<>();
        for (String line : lines) {
            try {
                JsonNode cell = json.readTree(line);
                cells.add(new SessionStore.Cell(cell.path("code").asString(""), cell.path("mode").asString("exec")));
            } catch (RuntimeException e) {
                // cut short by a kill: the cell never counted
            }
        }
        return cells;
    }
}
