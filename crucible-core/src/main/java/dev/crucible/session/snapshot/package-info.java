/**
 * Named, durable snapshots of sessions (issue 30) under {@code <data dir>/snapshots/}: each a copy of a session's
 * workspace, its logged cells and, behind gVisor, its saved sandbox, with the record a new session is made from. Knows
 * the files only: taking a snapshot of a live session, and a session made from one, are the session package's.
 */
package dev.crucible.session.snapshot;
