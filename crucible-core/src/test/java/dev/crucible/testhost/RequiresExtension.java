package dev.crucible.testhost;

import java.lang.reflect.AnnotatedElement;
import java.util.Optional;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * Applies {@link Requires}: before a class's tests (its annotation and its enclosing classes'), and before each test
 * (the method's). A missing capability skips, or fails where the run promises it.
 */
final class RequiresExtension implements BeforeAllCallback, BeforeEachCallback {
    @Override
    public void beforeAll(ExtensionContext context) {
        for (Class<?> c = context.getRequiredTestClass(); c != null; c = c.getEnclosingClass()) {
            check(c);
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getTestMethod().ifPresent(RequiresExtension::check);
    }

    private static void check(AnnotatedElement element) {
        Optional<Requires> requires = AnnotationSupport.findAnnotation(element, Requires.class);
        requires.ifPresent(r -> {
            for (Capability capability : r.value()) {
                capability.require();
            }
        });
    }
}
