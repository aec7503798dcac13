/**
 * What the server admits sessions and snapshots against: session numbers (each a uid), the sessions' caps, and the
 * memory and disk budgets over all of them. Knows nothing of live sessions.
 */
package dev.crucible.session.budget;
