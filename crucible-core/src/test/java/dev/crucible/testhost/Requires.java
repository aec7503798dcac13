package dev.crucible.testhost;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What a test class or method needs of the host ({@link Capability}), as containerd's {@code RequiresRoot} does: a
 * run that promises a capability ({@link Promises#VARIABLE}: {@code all}, as {@code ./run-tests} sets it, or a
 * comma-separated list of wire names) fails a test whose capability is missing; elsewhere the test is skipped with
 * the reason and the command that installs it. A shape of the host ({@link Capability#promisable()} false) is never
 * promised: its skips are allowed in CI only where {@code .ci/allowed-skips} lists them.
 *
 * <p>Where the need is known only inside the test (one parameter of many, or the engine's own finer probe), call
 * {@link Capability#require()} or {@link Capability#require(String)} instead.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(RequiresExtension.class)
public @interface Requires {
    Capability[] value();
}
