package dev.crucible.server.ports;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Preview tokens: what one grants comes back whole; a changed byte, another key or the passing of time grants nothing. */
class PreviewTokensTest {
    @Test
    void aTokenGrantsWhatItWasMadeForUntilItExpires(@TempDir Path dir) throws Exception {
        PreviewTokens tokens = PreviewTokens.in(dir);
        PreviewTokens.Grant grant = new PreviewTokens.Grant("owner-hash", "s1", 3000, 10_000);
        String token = tokens.mint(grant);
        assertThat(tokens.verify(token, 9_999)).isEqualTo(grant);
        assertThatThrownBy(() -> tokens.verify(token, 10_000)).isInstanceOfSatisfying(RequestException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_PREVIEW));
        assertThat(PreviewTokens.in(dir).verify(token, 0)).as("the key is kept: a restart keeps links").isEqualTo(grant);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("preview.key"))))
                .isEqualTo("rw-------");
    }

    @Test
    void aChangedPayloadOrAnotherKeyGrantsNothing(@TempDir Path a, @TempDir Path b) throws Exception {
        PreviewTokens tokens = PreviewTokens.in(a);
        String token = tokens.mint(new PreviewTokens.Grant("o", "s1", 3000, Long.MAX_VALUE));
        String other = tokens.mint(new PreviewTokens.Grant("o", "s2", 3000, Long.MAX_VALUE));
        String spliced = other.substring(0, other.indexOf('.')) + token.substring(token.indexOf('.'));
        for (String bad : new String[] {spliced, token + "x", "x" + token, "", "a.b", token.replace('.', '_')}) {
            assertThatThrownBy(() -> tokens.verify(bad, 0)).as(bad).isInstanceOf(RequestException.class);
        }
        assertThatThrownBy(() -> PreviewTokens.in(b).verify(token, 0)).isInstanceOf(RequestException.class);
    }

    @Test
    void aTokenHasOneSpellingOnly(@TempDir Path dir) throws Exception {
        PreviewTokens tokens = PreviewTokens.in(dir);
        String token = tokens.mint(new PreviewTokens.Grant("o", "s1", 3000, Long.MAX_VALUE));
        // a 32-byte signature is 43 base64 characters, the last carrying 2 bits the decoder drops: flip one of them
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        char last = token.charAt(token.length() - 1);
        String respelled = token.substring(0, token.length() - 1) + alphabet.charAt(alphabet.indexOf(last) ^ 1);
        assertThatThrownBy(() -> tokens.verify(respelled, 0)).isInstanceOf(RequestException.class);
    }

    @Test
    void aTokenBoundToALifeGrantsOnlyWhileThatLifeIsCurrent(@TempDir Path dir) throws Exception {
        PreviewTokens tokens = PreviewTokens.in(dir);
        PreviewTokens.Grant grant = new PreviewTokens.Grant("o", "s1", 0, Long.MAX_VALUE, "n1");
        String token = tokens.mint(grant);
        assertThat(tokens.verify(token, 0, g -> g.nonce().equals("n1"))).isEqualTo(grant);
        assertThatThrownBy(() -> tokens.verify(token, 0, g -> false)).as("its sandbox gone or its tokens rotated")
                .isInstanceOfSatisfying(RequestException.class, e -> assertThat(e.getMessage()).contains("rotated"));
        String unbound = tokens.mint(new PreviewTokens.Grant("o", "s1", 0, Long.MAX_VALUE));
        assertThatThrownBy(() -> tokens.verify(unbound, 0, g -> true)).as("every port, bound to nothing")
                .isInstanceOf(RequestException.class);
        String link = tokens.mint(new PreviewTokens.Grant("o", "s1", 3000, Long.MAX_VALUE));
        assertThat(tokens.verify(link, 0, g -> false).port()).as("a link is its session's only").isEqualTo(3000);
    }

    @Test
    void aTokenOfTheEarlierVersionIsRefusedSayingSo(@TempDir Path dir) throws Exception {
        PreviewTokens tokens = PreviewTokens.in(dir);
        String v1 = tokens.sign(String.join("\n", "v1", "s1", "0", Long.toString(Long.MAX_VALUE), "o"));
        assertThatThrownBy(() -> tokens.verify(v1, 0, g -> true)).isInstanceOfSatisfying(RequestException.class,
                e -> assertThat(e.getMessage()).contains("earlier version"));
    }
}
