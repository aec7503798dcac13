/**
 * Crucible as a kubernetes-sigs/agent-sandbox runtime (issue 53, {@code crucible serve --agent-sandbox}): the pod is one
 * sandbox and the sandbox is one Crucible session ({@link dev.crucible.server.agentsandbox.PodSession}), spoken to
 * through agent-sandbox's runtime contracts on listeners of their own: the python-runtime contract
 * ({@link dev.crucible.server.agentsandbox.PythonRuntime}, {@code examples/python-runtime-sandbox}: {@code /execute}, {@code /upload}, {@code /download}, {@code /list},
 * {@code /exists}) and sandboxd's REST filesystem ({@code /v1/files/{path}}, {@code /v1/health},
 * {@code /v1/metadata}). Commands run inside the session's sandbox, files are the sandbox's own, never the pod's.
 * Depends on the session engine only; never on {@code dev.crucible.server}, whose serve command starts it.
 */
package dev.crucible.server.agentsandbox;
