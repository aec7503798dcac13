/**
 * The OCI Distribution client ({@code ImagePuller}: manifests, blobs, auth, logins, timeouts) that fetches an image into the store through its public methods and commits it: never touches the store's files.
 */
package dev.crucible.image.registry;
