package dev.crucible.cli.image;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.image.registry.ImagePuller;
import dev.crucible.image.registry.RegistryCredentials;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.store.ImageStore;
import dev.crucible.server.ServerConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import picocli.CommandLine.Option;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.module.SimpleModule;
import tools.jackson.databind.ser.std.ToStringSerializer;

/** What the {@code crucible image} subcommands share: the store option, one-line failures with exit codes, formats. */
final class ImageCli {
    private ImageCli() {}

    /** {@code --data-dir DIR}: the store is {@code DIR/images}. */
    static final class StoreOption {
        @Option(names = "--data-dir", paramLabel = "DIR",
                description = "The data dir; images live in DIR/images (env CRUCIBLE_DATA_DIR; default /var/lib/crucible"
                        + " as root, else ~/.local/share/crucible).")
        Path dataDir;

        ImageStore open() throws IOException {
            Path dir = dataDir != null ? dataDir : ServerConfig.defaultDataDir(System.getenv());
            return ImageStore.open(dir.resolve("images"));
        }
    }

    /** {@code --insecure-registry HOST:PORT}…: how a pull or a push speaks to registries. */
    static final class RegistryOption {
        @Option(names = "--insecure-registry", paramLabel = "HOST:PORT",
                description = "A registry to speak plain HTTP to (loopback ones always may); repeatable.")
        List<String> insecure = new ArrayList<>();

        /** Those registries, logins from CRUCIBLE_REGISTRY_AUTH or ~/.docker/config.json, 60 s without data at most. */
        ImagePuller.Options options(long maxBytes) {
            return new ImagePuller.Options(Set.copyOf(insecure), maxBytes,
                    Duration.ofSeconds(60), RegistryCredentials.fromEnvironment(
                            System.getenv()));
        }
    }

    /** A subcommand's work; its exit code. */
    interface Body {
        int run() throws IOException;
    }

    /** Runs {@code body}; an image failure or I/O error is one line on {@code err} and its exit code. */
    static int run(PrintWriter err, Body body) {
        try {
            return body.run();
        } catch (ImageException e) {
            return CliSupport.fail(err, new CliSupport.Failure(exitCodeOf(e.failure()), e.getMessage()));
        } catch (IOException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.IMAGE_IO, describe(e)));
        } catch (CliSupport.Failure f) {
            return CliSupport.fail(err, f);
        }
    }

    /** An I/O failure in words: what went wrong on which file, and what to try. */
    static String describe(IOException e) {
        return switch (e) {
            case AccessDeniedException denied -> "cannot use the image store: permission denied on " + denied.getFile()
                    + " (run as the store's owner, or give --data-dir)";
            case NoSuchFileException missing -> "no such file: " + missing.getFile();
            case FileSystemException fs -> "image store: " + fs.getFile() + ": " + fs.getReason();
            default -> "image store: " + e.getMessage();
        };
    }

    static int exitCodeOf(ImageException.Failure failure) {
        return switch (failure) {
            case INVALID_REFERENCE -> ExitCodes.INVALID_REQUEST;
            case NOT_FOUND -> ExitCodes.IMAGE_NOT_FOUND;
            case UNAUTHORIZED -> ExitCodes.REGISTRY_UNAUTHORIZED;
            case UNREACHABLE -> ExitCodes.REGISTRY_UNREACHABLE;
            case DIGEST_MISMATCH -> ExitCodes.DIGEST_MISMATCH;
            case UNSUPPORTED -> ExitCodes.IMAGE_UNSUPPORTED;
            case HOSTILE_LAYER -> ExitCodes.HOSTILE_LAYER;
            case TOO_LARGE -> ExitCodes.IMAGE_TOO_LARGE;
            case INVALID_BUILD -> ExitCodes.INVALID_REQUEST;
        };
    }

    static ImageException notFound(String reference) {
        return new ImageException(ImageException.Failure.NOT_FOUND, "no image '" + reference
                + "' in the store; `crucible image ls` lists the images, `crucible image pull` fetches one");
    }

    /** Images as JSON: paths as plain strings, times as ISO-8601. */
    static JsonMapper json() {
        return Json.MAPPER;
    }

    private static final class Json {
        static final JsonMapper MAPPER = CliSupport.json().rebuild()
                .addModule(new SimpleModule("crucible-image-cli").addSerializer(Path.class, ToStringSerializer.instance))
                .build();
    }

    /** The first 12 hex digits of a digest. */
    static String shortHex(String digest) {
        String hex = digest.startsWith("sha256:") ? digest.substring(7) : digest;
        return hex.substring(0, Math.min(12, hex.length()));
    }

    /** Bytes in decimal units, as registries and Docker show them: {@code 45.3 MB}. */
    static String size(long bytes) {
        if (bytes < 1000) {
            return bytes + " B";
        }
        String[] units = {"kB", "MB", "GB", "TB"};
        double value = bytes;
        int unit = -1;
        while (value >= 1000 && unit < units.length - 1) {
            value /= 1000;
            unit++;
        }
        return String.format(Locale.ROOT, "%.1f %s", value, units[unit]);
    }

    /** How long ago: {@code 5 minutes ago}. */
    static String age(Instant then, Instant now) {
        Duration d = Duration.between(then, now);
        if (d.toMinutes() < 1) {
            return "just now";
        }
        long[] amounts = {d.toDays() / 365, d.toDays() / 30, d.toDays() / 7, d.toDays(), d.toHours(), d.toMinutes()};
        String[] units = {"year", "month", "week", "day", "hour", "minute"};
        for (int i = 0; i < amounts.length; i++) {
            if (amounts[i] >= 1) {
                return amounts[i] + " " + units[i] + (amounts[i] == 1 ? "" : "s") + " ago";
            }
        }
        return "just now";
    }
}
