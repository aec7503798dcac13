package dev.crucible.session.edit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.session.edit.V4aDiff.Mode;
import org.junit.jupiter.api.Test;

/**
 * V4A diffs as OpenAI's apply_patch sends them: the behaviours of the reference applier (openai-agents-python's
 * {@code apply_diff} and its test cases), restated here: anchors, fuzz, EOF, line endings, and the errors.
 */
class V4aDiffTest {
    private static String lines(String... lines) {
        return String.join("\n", lines);
    }

    @Test
    void aFloatingHunkAddsLinesToAnEmptyText() {
        assertThat(V4aDiff.apply("", lines("@@", "+hello", "+world"), Mode.UPDATE)).isEqualTo("hello\nworld\n");
        assertThat(V4aDiff.apply("", "@@\r\n+hello\r\n+world", Mode.UPDATE)).isEqualTo("hello\r\nworld\r\n");
    }

    @Test
    void createModeTakesOnlyPlusLinesAndKeepsTheTrailingNewline() {
        assertThat(V4aDiff.apply("", lines("+hello", "+world", "+"), Mode.CREATE)).isEqualTo("hello\nworld\n");
        assertThat(V4aDiff.apply("", "+hello\r\n+world\r\n+", Mode.CREATE)).isEqualTo("hello\r\nworld\r\n");
        assertThatThrownBy(() -> V4aDiff.apply("", "plain line", Mode.CREATE)).isInstanceOf(PatchException.class)
                .hasMessage("Invalid Add File Line: plain line");
    }

    @Test
    void aContextualReplacementKeepsTheFilesLineEndings() {
        String diff = lines("@@ line1", "-line2", "+updated", " line3");
        assertThat(V4aDiff.apply("line1\nline2\nline3\n", diff, Mode.UPDATE)).isEqualTo("line1\nupdated\nline3\n");
        assertThat(V4aDiff.apply("line1\r\nline2\r\nline3\r\n", diff, Mode.UPDATE))
                .isEqualTo("line1\r\nupdated\r\nline3\r\n");
        assertThat(V4aDiff.apply("line1\nline2\nline3\n", diff.replace("\n", "\r\n"), Mode.UPDATE))
                .isEqualTo("line1\nupdated\nline3\n");
    }

    @Test
    void stackedAnchorsNarrowToTheNamedBlock() {
        String input = lines("class First", "    def run():", "        pass", "class Second", "    def run():",
                "        pass", "");
        String diff = lines("@@ class Second", "@@     def run():", "-        pass", "+        return 1");
        assertThat(V4aDiff.apply(input, diff, Mode.UPDATE)).isEqualTo(lines("class First", "    def run():",
                "        pass", "class Second", "    def run():", "        return 1", ""));
    }

    @Test
    void twoHunksWithStackedAnchorsChangeTwoBlocks() {
        String input = lines("class BaseClass", "    def search():", "        pass", "", "class Subclass",
                "    def search():", "        pass", "");
        String diff = lines("@@ class BaseClass", "@@     def search():", "-        pass",
                "+        raise NotImplementedError()", "", "@@ class Subclass", "@@     def search():", "-        pass",
                "+        raise NotImplementedError()");
        assertThat(V4aDiff.apply(input, diff, Mode.UPDATE)).isEqualTo(lines("class BaseClass", "    def search():",
                "        raise NotImplementedError()", "", "class Subclass", "    def search():",
                "        raise NotImplementedError()", ""));
    }

    @Test
    void anAnchorThatMatchesNothingIsAdvisory() {
        assertThat(V4aDiff.apply("a\nb\n", lines("@@ nope", "@@ also-nope", "-b", "+B"), Mode.UPDATE))
                .isEqualTo("a\nB\n");
        assertThat(V4aDiff.apply("class Only\n    def run():\n        pass\n",
                lines("@@ class Only", "@@", "-        pass", "+        return 1"), Mode.UPDATE))
                .isEqualTo("class Only\n    def run():\n        return 1\n");
    }

    @Test
    void contextIsFoundIgnoringTrailingThenSurroundingWhitespace() {
        assertThat(V4aDiff.apply("x = 1   \ny = 2\n", lines("@@", " x = 1", "-y = 2", "+y = 3"), Mode.UPDATE))
                .isEqualTo("x = 1   \ny = 3\n");
        assertThat(V4aDiff.apply("\tx = 1\ny = 2\n", lines("@@", " x = 1", "-y = 2", "+y = 3"), Mode.UPDATE))
                .isEqualTo("\tx = 1\ny = 3\n");
    }

    @Test
    void anEndOfFileHunkMatchesTheLastLines() {
        String input = "a\nb\na\nb";
        assertThat(V4aDiff.apply(input, lines("@@", " a", "-b", "+c", "*** End of File"), Mode.UPDATE))
                .isEqualTo("a\nb\na\nc");
    }

    @Test
    void contextThatIsNotInTheTextIsRefusedWithTheLine() {
        assertThatThrownBy(() -> V4aDiff.apply("one\ntwo\n", lines("@@ -1,2 +1,2 @@", " x", "-two", "+2"),
                Mode.UPDATE)).isInstanceOf(PatchException.class).hasMessageStartingWith("Invalid Context 0:\nx");
        assertThatThrownBy(() -> V4aDiff.apply("one\n", lines("@@", "?odd"), Mode.UPDATE))
                .isInstanceOf(PatchException.class).hasMessage("Invalid Line: ?odd");
        assertThatThrownBy(() -> V4aDiff.apply("one\n", lines("@@", " one", "*** Bogus"), Mode.UPDATE))
                .isInstanceOf(PatchException.class).hasMessage("Invalid Line: *** Bogus");
    }

    @Test
    void aSecondHunkWithoutItsAnchorIsRefused() {
        assertThatThrownBy(() -> V4aDiff.apply("a\nb\nc\n", lines("@@", "-a", "+A", "*** End of File", "-b", "+B"),
                Mode.UPDATE)).isInstanceOf(PatchException.class).hasMessage("Invalid Line:\n-b");
    }
}
