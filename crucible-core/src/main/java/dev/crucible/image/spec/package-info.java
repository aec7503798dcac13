/**
 * The image vocabulary (references, digests, the OCI and Docker manifest, index and config documents, platform
 * matching, the typed failure): values and parsing only, depending on nothing else of {@code dev.crucible.image}.
 */
package dev.crucible.image.spec;
