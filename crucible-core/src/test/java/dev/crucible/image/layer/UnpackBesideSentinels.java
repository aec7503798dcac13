package dev.crucible.image.layer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * A test that unpacks hostile layers into {@link #root} beside a sentinel tree ({@link #outside}) that no layer may
 * change: planted before each test, and checked after it, attribute by attribute (the {@code unix:} attributes given
 * to the constructor) and byte by byte.
 */
public abstract class UnpackBesideSentinels {
    @TempDir
    protected Path base;

    protected Path root;
    protected Path outside;
    /** {@link #outside} as a name inside a layer: the host's absolute path of the sentinel tree. */
    protected String outsideAbsolute;
    protected Map<String, String> outsideBefore;
    protected LayerUnpacker unpacker;

    private final String snapshot;
    private final boolean onlyRootBeside;

    /** @param snapshot what "unchanged" means for the sentinel tree: the {@code unix:} attributes compared */
    protected UnpackBesideSentinels(String snapshot) {
        this(snapshot, false);
    }

    /** @param onlyRootBeside whether each test also checks that nothing but the root and the sentinels is in {@link #base} */
    protected UnpackBesideSentinels(String snapshot, boolean onlyRootBeside) {
        this.snapshot = snapshot;
        this.onlyRootBeside = onlyRootBeside;
    }

    @BeforeEach
    final void plantSentinels() throws IOException {
        Sentinels.Planted planted = Sentinels.plant(base, snapshot);
        root = planted.root();
        outside = planted.outside();
        outsideAbsolute = planted.outsideAbsolute();
        outsideBefore = planted.before();
        unpacker = LayerUnpacker.into(root, LayerUnpacker.Caps.defaults());
    }

    @AfterEach
    final void nothingOutsideTheRootChanged() throws IOException {
        assertThat(Sentinels.snapshot(outside, snapshot)).isEqualTo(outsideBefore);
        if (onlyRootBeside) {
            try (Stream<Path> beside = Files.list(base)) {
                assertThat(beside.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("root", "outside");
            }
        }
    }
}
