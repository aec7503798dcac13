/**
 * What the server admits sessions and snapshots against: session numbers (each a uid), the sessions' caps, the
 * memory budget and the operator's disk budget over all of them, and the room the data directory's disk has now
 * ({@code DiskRoom}). Knows nothing of live sessions.
 */
package dev.crucible.session.budget;
