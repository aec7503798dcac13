/**
 * Stateless execution: a request becomes a program in a warm, forked or cold sandbox, run once more when the sandbox
 * never took it; knows no session, server or dataset.
 */
package dev.crucible.exec;
