/**
 * Commands in a session's sandbox beside its interpreter: the host's end of the sandbox's supervisor
 * (crucible-supervisor.c, its pid 2, which started the interpreter), the commands' shape and their results. It knows
 * no HTTP; the server's session routes call it through {@code SessionManager}.
 */
package dev.crucible.session.process;
