package dev.crucible.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.Locale;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Where the library's log records go: one line each on stderr. A server ({@link Audience#OPERATOR}) shows
 * {@code INFO} and up with a timestamp and stack traces, as a log; any other command ({@link Audience#USER}) shows only
 * warnings, as {@code crucible: warning: …}, so that a one-shot command's stderr is the program's and its own one-line
 * errors (the uid block it took because a server holds the first one is no news to someone running a file).
 */
final class CliLogging {
    /** Who reads stderr. */
    enum Audience { OPERATOR, USER }

    private CliLogging() {}

    /** Replaces the root logger's handlers with one stderr handler for {@code audience}. */
    static void configure(Audience audience) {
        Logger root = Logger.getLogger("");
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        Level level = audience == Audience.OPERATOR ? Level.INFO : Level.WARNING;
        Handler handler = new ConsoleHandler();
        handler.setLevel(level);
        handler.setFormatter(new OneLine(audience));
        root.setLevel(level);
        root.addHandler(handler);
    }

    /** {@code 2026-11-23T14:41:21.123Z INFO message} for an operator, {@code crucible: warning: message} for a user. */
    static final class OneLine extends Formatter {
        private final Audience audience;

        OneLine(Audience audience) {
            this.audience = audience;
        }

        @Override
        public String format(LogRecord record) {
            StringBuilder line = new StringBuilder();
            String message = formatMessage(record).replace('\n', ' ');
            if (audience == Audience.OPERATOR) {
                line.append(Instant.ofEpochMilli(record.getMillis())).append(' ').append(record.getLevel().getName())
                        .append(' ').append(message).append('\n');
                if (record.getThrown() != null) {
                    StringWriter trace = new StringWriter();
                    record.getThrown().printStackTrace(new PrintWriter(trace));
                    line.append(trace);
                }
            } else {
                line.append("crucible: ").append(record.getLevel().getName().toLowerCase(Locale.ROOT))
                        .append(": ").append(message);
                if (record.getThrown() != null) {
                    line.append(" (").append(record.getThrown().getMessage()).append(')');
                }
                line.append('\n');
            }
            return line.toString();
        }
    }
}
