/**
 * The content-addressed image store under one directory (verified blobs, one unpacked root per image id, names,
 * leases, prune), safe across threads and processes: never fetches, imports or builds anything itself.
 */
package dev.crucible.image.store;
