/**
 * The host uids of one launcher: {@code UidLayout} derives every range it uses (slots, sessions, zygotes, the root
 * blocks they imply) in one place, and {@code UidLease} claims that whole range host-wide against every other live
 * Crucible process. Depends on {@code os} and the {@code sandbox} vocabulary only; launch, zygote and bwrap read their
 * uids from here, never the other way round.
 */
package dev.crucible.sandbox.uid;
