/**
 * The sandboxes' seccomp programs, built with libseccomp through FFM behind a prefix of our own and cached per user;
 * knows nothing of how, where or by whom a program is loaded.
 */
package dev.crucible.sandbox.seccomp;
