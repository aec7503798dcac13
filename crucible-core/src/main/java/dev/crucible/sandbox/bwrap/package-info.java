/**
 * The bubblewrap {@code Sandbox} ({@code BwrapSandbox.create}): slots and their leased uids, lent directories and the
 * supervision of runs and sessions, composed from launch, cgroup, seccomp and zygote, which never depend on it.
 */
package dev.crucible.sandbox.bwrap;
