/**
 * Import of image archives ({@code docker save}, OCI image layouts as a directory or tar) into the store: entry names
 * are keys, never paths; writes the store only through {@code BlobWriter}, {@code putBlob} and {@code commit}, and
 * fetches nothing from a registry.
 */
package dev.crucible.image.archive;
