/**
 * The runtimes ({@code runtimes.toml}, the agents, versions probed once and cached) and how a request's language and
 * image resolve to one; starts no run itself.
 */
package dev.crucible.runtime;
