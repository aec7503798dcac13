/**
 * Drop-in routes for clients of other services (Piston v2, SandboxFusion, Replit code-exec) on the stateless
 * executor, in those services' own wire forms; it never touches sessions.
 */
package dev.crucible.server.compat;
