package dev.crucible.cli;

import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The house's shape, read from the compiled main classes of every module: no cycle between packages, every
 * dependency pointing down the layers (AGENTS.md "Map"), and no flat package grown past the size where it
 * needs rooms. A change that breaks one names the offending classes.
 */
class ArchitectureTest {

    /** The repository: surefire and failsafe run in crucible-cli. */
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();

    private static JavaClasses classes;

    @BeforeAll
    static void importMainClasses() {
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(location -> !location.contains("-tests.jar")) // the core test-jar's fixtures
                .importPackages("dev.crucible");
        // the test classpath reads the other modules as directories (target/classes) in a reactor build and as
        // jars otherwise; either way all five modules must be there, or the rules below would pass vacuously
        assertThat(classes.stream().map(JavaClass::getPackageName)
                .filter(p -> p.startsWith("dev.crucible.")).map(p -> p.split("\\.")[2]).distinct())
                .contains("sandbox", "session", "eval", "server", "cli", "client");
    }

    @Test
    void noTwoPackagesDependOnEachOther() {
        ArchRule rule = slices().matching("dev.(**)").should().beFreeOfCycles(); // "dev.(**)": the root package too
        rule.check(classes);
    }

    @Test
    void everyDependencyPointsDownTheLayers() {
        ArchRule rule = layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("Foundation").definedBy("dev.crucible.os..", "dev.crucible.util..", "dev.crucible.health..",
                        "dev.crucible.error..")
                .layer("Egress").definedBy("dev.crucible.egress..")
                .layer("Sandbox").definedBy("dev.crucible.sandbox..")
                .layer("Image").definedBy("dev.crucible.image..")
                .layer("Runtime").definedBy("dev.crucible.runtime..")
                .layer("Execution").definedBy("dev.crucible.pool..", "dev.crucible.exec..")
                .layer("Session").definedBy("dev.crucible.session..")
                .layer("Engine").definedBy("dev.crucible")
                .layer("Client").definedBy("dev.crucible.client..")
                .layer("Eval").definedBy("dev.crucible.eval..")
                .layer("Server").definedBy("dev.crucible.server..")
                .layer("Cli").definedBy("dev.crucible.cli..")
                .whereLayer("Cli").mayNotBeAccessedByAnyLayer()
                .whereLayer("Server").mayOnlyBeAccessedByLayers("Cli")
                .whereLayer("Eval").mayOnlyBeAccessedByLayers("Server", "Cli")
                .whereLayer("Client").mayOnlyBeAccessedByLayers("Server", "Cli")
                .whereLayer("Engine").mayOnlyBeAccessedByLayers("Eval", "Server", "Cli")
                .whereLayer("Session").mayOnlyBeAccessedByLayers("Engine", "Eval", "Server", "Cli")
                .whereLayer("Execution").mayOnlyBeAccessedByLayers("Session", "Engine", "Eval", "Server", "Cli")
                .whereLayer("Runtime").mayOnlyBeAccessedByLayers("Execution", "Session", "Engine", "Eval", "Server",
                        "Cli")
                .whereLayer("Image").mayOnlyBeAccessedByLayers("Runtime", "Execution", "Session", "Engine", "Eval",
                        "Server", "Cli")
                .whereLayer("Sandbox").mayOnlyBeAccessedByLayers("Image", "Runtime", "Execution", "Session", "Engine",
                        "Eval", "Server", "Cli")
                .whereLayer("Egress").mayOnlyBeAccessedByLayers("Sandbox", "Image", "Runtime", "Execution", "Session",
                        "Engine", "Eval", "Server", "Cli");
        rule.check(classes);
    }

    @Test
    void everyPackageBelongsToALayer() {
        var unplaced = classes.stream().map(JavaClass::getPackageName).distinct()
                .filter(p -> !p.equals("dev.crucible"))
                .filter(p -> !p.matches("dev\\.crucible\\.(os|util|health|error|egress|sandbox|image|runtime|pool"
                        + "|exec|session|client|eval|server|cli)(\\..*)?"))
                .toList();
        assertThat(unplaced).as("packages outside every layer of everyDependencyPointsDownTheLayers").isEmpty();
    }

    /** A top-level public type: at the start of a line, {@code public}, then its modifiers and kind. */
    private static final Pattern PUBLIC_TYPE = Pattern.compile(
            "(?m)^public (?:(?:final|abstract|sealed|non-sealed|static) )*(?:class|record|interface|enum|@interface) ");

    /**
     * A flat package whose public surface passes 16 types is a wing that needs rooms (issue 26). Package-private
     * helpers do not count (issue 51 item 4: a package keeps its implementations to itself instead of making them
     * public to stay under a count). A file's size is measured in statements by checkstyle's {@code JavaNCSS}
     * (config/checkstyle.xml), not here in raw lines, which folding Javadoc or dropping blank lines could keep down.
     * Read from the sources of every module.
     */
    @Test
    void noPackageIsAWingWithoutRooms() throws IOException {
        Map<Path, List<Path>> sourcesPerPackage;
        try (Stream<Path> files = Files.walk(REPO)) {
            sourcesPerPackage = files.filter(f -> f.toString().endsWith(".java"))
                    .filter(f -> f.toString().contains("/src/main/java/"))
                    .filter(f -> !f.toString().contains("/node_modules/"))
                    .collect(Collectors.groupingBy(Path::getParent, TreeMap::new, Collectors.toList()));
        }
        assertThat(sourcesPerPackage).hasSizeGreaterThan(10);
        for (var entry : sourcesPerPackage.entrySet()) {
            String pkg = REPO.relativize(entry.getKey()).toString();
            List<Path> surface = new ArrayList<>();
            for (Path file : entry.getValue()) {
                if (PUBLIC_TYPE.matcher(Files.readString(file)).find()) {
                    surface.add(file.getFileName());
                }
            }
            assertThat(surface).as("public types in %s", pkg).hasSizeLessThanOrEqualTo(16);
        }
    }

    /** Each room says what it owns and what it must not touch, and AGENTS.md's map has a line for it. */
    @Test
    void everyPackageSaysWhatItOwnsAndIsOnTheMap() throws IOException {
        String agents = Files.readString(REPO.resolve("AGENTS.md"));
        List<Path> packages;
        try (Stream<Path> files = Files.walk(REPO)) {
            packages = files.filter(f -> f.toString().endsWith(".java") && f.toString().contains("/src/main/java/"))
                    .filter(f -> !f.toString().contains("/node_modules/"))
                    .map(Path::getParent).distinct().sorted().toList();
        }
        for (Path dir : packages) {
            String pkg = dir.toString().substring(dir.toString().indexOf("/src/main/java/") + 15).replace('/', '.');
            assertThat(dir.resolve("package-info.java")).as("package-info.java of %s", pkg).isRegularFile();
            String name = pkg.equals("dev.crucible") ? "dev.crucible" : pkg.substring("dev.crucible.".length());
            assertThat(agents).as("AGENTS.md's map names %s as `%s`", pkg, name).contains("`" + name + "`");
        }
    }
}
