package dev.crucible.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.error.RequestException;
import dev.crucible.image.layer.CraftedLayer;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The images of a data dir whose store does not exist yet (a fresh install): found once another process makes it. */
class ImagesTest {
    @TempDir
    Path data;

    @Test
    void aStoreMadeAfterTheImagesWereOpenedIsFoundAndLookingCreatesNothing() throws Exception {
        Path dir = data.resolve("images");
        try (Images images = Images.at(dir, Images.PullPolicy.never())) {
            assertThat(images.find("crucible.test/app:1")).isEmpty();
            assertThatThrownBy(() -> images.require("crucible.test/app:1")).isInstanceOf(RequestException.class)
                    .hasMessageContaining("run: crucible image pull crucible.test/app:1");
            assertThat(dir).as("a lookup creates no store").doesNotExist();

            byte[] layer = new CraftedLayer().dir("app").file("app/main.py", "print('a')\n").plain();
            Image stored = StoreFixtures.commit(ImageStore.open(dir), "crucible.test/app:1", "later", layer);

            assertThat(images.find("crucible.test/app:1")).map(Image::digest).contains(stored.digest());
            assertThat(images.require("crucible.test/app:1").digest()).isEqualTo(stored.digest());
        }
    }
}
