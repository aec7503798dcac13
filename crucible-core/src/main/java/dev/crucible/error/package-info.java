/**
 * Every refusal Crucible answers with ({@link dev.crucible.error.ErrorCode}: wire name, HTTP status, Retry-After) and
 * the one exception that carries it ({@link dev.crucible.error.RequestException}); the bottom of the house, it depends
 * on nothing of Crucible's.
 */
package dev.crucible.error;
