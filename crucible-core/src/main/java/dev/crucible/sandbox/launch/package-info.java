/**
 * How one sandbox process is started (docs/sandbox-recipe.md, The launch chain): the argv of crucible-launch, or sh and
 * setpriv, then bwrap; the one launcher thread; the host's tools, the synthetic /etc and the proxy variables; it holds
 * no slot, supervises nothing and knows no zygote.
 */
package dev.crucible.sandbox.launch;
