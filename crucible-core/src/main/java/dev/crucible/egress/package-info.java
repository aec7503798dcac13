/**
 * Network egress as the operator and a request see it: the operator's list and what a request is granted within it
 * ({@link dev.crucible.egress.Egress}), and the wire forms ({@link dev.crucible.egress.NetworkRequest},
 * {@link dev.crucible.egress.EgressReport}), over the rooms {@code address}, {@code policy} and {@code proxy}, none of
 * which may depend on this package.
 */
package dev.crucible.egress;
