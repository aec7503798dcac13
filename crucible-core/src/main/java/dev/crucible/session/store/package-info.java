/**
 * What a session keeps on disk under {@code <data dir>/sessions/<id>/} (its record, its cell log, the replica's lease
 * on it), written so that a crash or a full disk never leaves half a record; never touches a workspace's files but
 * through {@link dev.crucible.session.workspace.Workspace}, and knows nothing of live sessions or interpreters.
 */
package dev.crucible.session.store;
