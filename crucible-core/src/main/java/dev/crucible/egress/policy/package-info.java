/**
 * The allowlist: entries as an operator writes them, narrowing one list within another, and the list's verdict on a
 * target (with the reasons the proxy answers by); pure values over {@code address}, never a socket or a proxy.
 */
package dev.crucible.egress.policy;
