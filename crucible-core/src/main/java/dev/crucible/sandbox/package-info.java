/**
 * The sandbox vocabulary every caller speaks (what to run, its limits and result, the launcher's interface, settings
 * and host report); it depends on none of the sub-packages that build a sandbox.
 */
package dev.crucible.sandbox;
