package dev.crucible.image.build;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The Dockerfile subset read into build steps; everything outside it refused with its line. */
class DockerfileTest {

    @Test
    void instructionsContinuationsHeredocsAndVariablesBecomeSteps() {
        Dockerfile.Parsed parsed = Dockerfile.parse("""
                # syntax=docker/dockerfile:1
                ARG BASE=debian:12
                FROM ${BASE} AS build
                ARG VERSION=1.0
                ENV HOME_DIR=/opt/app \\
                    # a comment inside a continuation
                    GREETING="hello world" PLAIN=$VERSION
                WORKDIR $HOME_DIR/sub
                COPY --chown=1000:1000 --chmod=750 src/ ./
                ADD ["a b.txt", "/etc/${PLAIN:-none}.txt"]
                RUN apt-get update \\
                    && apt-get install -y curl
                RUN ["python3", "-c", "print(1)"]
                RUN <<EOF
                set -e
                echo $GREETING > /opt/x
                EOF
                RUN python3 <<-'PY'
                	print("tab stripped")
                PY
                USER 1000:1000
                EXPOSE 8080 9000/udp
                LABEL org.example.team="core team"
                CMD python3 -m http.server
                ENTRYPOINT ["/entry"]
                """, Map.of("VERSION", "2.5"));

        assertThat(parsed.from()).isEqualTo("debian:12");
        assertThat(parsed.steps()).containsExactly(
                new BuildStep.Arg("VERSION", "2.5"),
                new BuildStep.Env("HOME_DIR", "/opt/app"),
                new BuildStep.Env("GREETING", "hello world"),
                new BuildStep.Env("PLAIN", "2.5"),
                new BuildStep.Workdir("/opt/app/sub"),
                new BuildStep.Copy(List.of("src/"), "./", 0750),
                new BuildStep.Copy(List.of("a b.txt"), "/etc/2.5.txt", null),
                BuildStep.Run.shell("apt-get update  && apt-get install -y curl"),
                new BuildStep.Run(List.of("python3", "-c", "print(1)")),
                BuildStep.Run.shell("set -e\necho $GREETING > /opt/x\n"),
                BuildStep.Run.shell("python3 <<-'PY'\nprint(\"tab stripped\")\nPY"),
                new BuildStep.User("1000:1000"),
                new BuildStep.Expose("8080"),
                new BuildStep.Expose("9000/udp"),
                new BuildStep.Label("org.example.team", "core team"),
                new BuildStep.Cmd(List.of("/bin/sh", "-c", "python3 -m http.server")),
                new BuildStep.Entrypoint(List.of("/entry")));
    }

    @Test
    void aGlobalArgReachesFromOnlyAndTheOldEnvFormTakesTheRestOfTheLine() {
        Dockerfile.Parsed parsed = Dockerfile.parse("ARG TAG=3\nFROM img:$TAG\nENV MSG hello there\nRUN echo $TAG\n",
                Map.of());
        assertThat(parsed.from()).isEqualTo("img:3");
        assertThat(parsed.steps()).containsExactly(new BuildStep.Env("MSG", "hello there"),
                BuildStep.Run.shell("echo $TAG"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "FROM a\\nFROM b|2|multi-stage",
        "FROM a\\nCOPY --from=b /x /y|2|--from",
        "FROM a\\nRUN --mount=type=cache,target=/root true|2|--mount",
        "FROM a\\nADD https://example.com/x.tgz /x|2|a URL is not fetched",
        "FROM a\\nADD pkg.tar.gz /opt|2|archives are not unpacked",
        "FROM a\\n\\nSHELL [\"/bin/bash\", \"-c\"]|3|SHELL is not supported",
        "FROM a\\nVOLUME /data|2|VOLUME is not supported",
        "FROM a\\nHEALTHCHECK CMD true|2|HEALTHCHECK",
        "FROM a\\nFROBNICATE x|2|unknown instruction FROBNICATE",
        "RUN true|1|before FROM",
        "# nothing|0|no FROM",
        "FROM scratch|1|FROM scratch",
        "FROM a\\nRUN <<EOF\\necho never ends|2|has no line 'EOF'",
        "FROM a\\nCOPY --chmod=u+x a /b|2|octal",
        "FROM a\\nEXPOSE http|2|EXPOSE http",
        "FROM --platform=linux/arm64 a|1|--platform",
    })
    void anInstructionOutsideTheSubsetIsRefusedNamingItsLine(String text, int line, String message) {
        assertThatThrownBy(() -> Dockerfile.parse(text.replace("\\n", "\n"), Map.of()))
                .isInstanceOfSatisfying(Dockerfile.Invalid.class, e -> {
                    assertThat(e.line()).isEqualTo(line);
                    assertThat(e.getMessage()).contains(message)
                            .startsWith(line > 0 ? "Dockerfile line " + line + ": " : "Dockerfile: ");
                });
    }
}
