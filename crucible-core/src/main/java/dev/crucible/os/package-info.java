/**
 * The Linux calls the JDK lacks, through FFM (openat2, pidfds, signals, flock, mounts, SCM_RIGHTS, network
 * namespaces); the bottom of the house, it knows no sandbox.
 */
package dev.crucible.os;
