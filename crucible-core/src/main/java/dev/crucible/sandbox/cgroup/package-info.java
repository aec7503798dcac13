/**
 * Per-run control groups on cgroup v1 and v2 (limits, counters, members killed through pidfds, the favordynmods
 * tuning); never starts a process, and never decides which run gets which group.
 */
package dev.crucible.sandbox.cgroup;
