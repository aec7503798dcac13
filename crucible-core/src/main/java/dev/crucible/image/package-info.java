/**
 * The images an engine may run in ({@code Images}: the store plus the operator's pull policy, pulls a request starts,
 * leases): the facade above the {@code spec}, {@code layer}, {@code store}, {@code registry}, {@code archive} and
 * {@code build} sub-packages, none of which may depend on it.
 */
package dev.crucible.image;
