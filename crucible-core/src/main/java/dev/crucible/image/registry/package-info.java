/**
 * The OCI Distribution client ({@code ImagePuller}: manifests, blobs, auth, logins, read timeouts): fetches an image
 * and commits it to the store, writing the store only through {@code BlobWriter} and {@code commit}, never its files
 * directly.
 */
package dev.crucible.image.registry;
