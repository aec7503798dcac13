/**
 * {@code crucible session}: an interactive REPL in a sandboxed session (JLine), on the local engine's sessions or a
 * server's ({@code --url}); it only drives a session and keeps nothing of its own but the history file.
 */
package dev.crucible.cli.session;
