/**
 * Import of image archives ({@code docker save}, OCI image layouts as a directory or tar) into the store through its public methods: entry names are keys, never paths, and nothing is fetched from a registry.
 */
package dev.crucible.image.archive;
