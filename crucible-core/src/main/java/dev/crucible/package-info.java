/**
 * The engine's composition root ({@code Crucible}): the sandbox, runtimes, images, pool and executor built once by
 * hand; nothing in crucible-core depends on it.
 */
package dev.crucible;
