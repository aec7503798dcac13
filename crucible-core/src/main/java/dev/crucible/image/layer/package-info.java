/**
 * Image layers as hostile input, applied onto a root through descriptors that never leave it ({@code LayerUnpacker})
 * or written from the changes to a root ({@code RootDiff}): knows tar streams and root directories, never the store, a
 * registry or an image's name.
 */
package dev.crucible.image.layer;
