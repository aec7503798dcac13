/**
 * Computer use (issue 54): a session with a desktop (an X display, a window manager, a VNC server, all inside the
 * session's sandbox as its user), its screenshots and input actions run as commands in the session, and what E2B's
 * {@code desktop} template needs in a session's root. Works through {@link dev.crucible.session.SessionManager}
 * only: never runs anything on the host, never depends on {@code dev.crucible.server}'s route table.
 */
package dev.crucible.server.desktop;
