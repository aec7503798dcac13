/**
 * What the server admits sessions and snapshots against: session numbers (each a uid), the sessions' caps, the
 * memory budget and the operator's disk budget over all of them, the room the data directory's disk has now
 * ({@code DiskRoom}), and each owner's share of it for workspaces that grow ({@code Shares}: water-filling over what
 * each holds beyond its floors). Knows nothing of live sessions.
 */
package dev.crucible.session.budget;
