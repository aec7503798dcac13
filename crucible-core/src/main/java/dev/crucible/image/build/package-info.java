/**
 * {@code crucible image build}: steps run in sandboxes over a private copy of a stored image's root, their changes committed to the store as one new layer: never pulls or imports, and never writes the store's files but through its public methods.
 */
package dev.crucible.image.build;
