/**
 * A session's interpreter as a peer that may be hostile: the framed protocol with request ids and frame caps over a
 * long-lived sandbox's pipes; knows nothing of sessions, their store or their files.
 */
package dev.crucible.session.interpreter;
