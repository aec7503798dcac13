/**
 * Stateful sessions, the façade ({@link dev.crucible.session.SessionManager}) and each session's life (create, load
 * or adopt, cells, files, network, reaping), built on its rooms {@code spec}, {@code store}, {@code workspace} and
 * {@code interpreter} (and those the whole-computer session adds beside them: commands, processes, terminals, ports),
 * none of which may depend on this package.
 */
package dev.crucible.session;
