/**
 * The warm pool: started sandboxes waiting for a program, per runtime and image digest, at most half the slots; runs
 * no program itself.
 */
package dev.crucible.pool;
