/**
 * What a session is asked for and answers with (its limits, its info, a cell's result and status), and how the
 * operator configures sessions ({@code SessionConfig}): records and enums that every room of
 * {@code dev.crucible.session} may use, and that depend on no session code.
 */
package dev.crucible.session.spec;
