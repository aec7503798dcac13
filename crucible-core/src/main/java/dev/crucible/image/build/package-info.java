/**
 * {@code crucible image build}: steps run in sandboxes over a private copy of a stored image's root, their changes
 * committed to the store as one new layer; writes the store only through {@code putBlob} and {@code commit}, and never
 * pulls or imports.
 */
package dev.crucible.image.build;
