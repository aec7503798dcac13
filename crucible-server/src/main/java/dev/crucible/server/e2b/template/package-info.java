/**
 * E2B's template API (issue 52): {@code POST /v3/templates}, the COPY uploads, {@code POST /v2/templates/{id}/builds/
 * {build}}, the build status with its logs, aliases, tags, list and delete, per token; a build is Crucible's image
 * build ({@code image.build}) in the background, its image named in the store, and a sandbox created from the alias
 * runs in it. Depends on the engine's image store and sandbox and on {@code error}; never on {@code server.e2b}
 * (which calls it).
 */
package dev.crucible.server.e2b.template;
