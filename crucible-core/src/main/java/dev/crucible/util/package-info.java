/**
 * Small values every layer may use (a value computed once, files kept for the next process); depends on nothing of
 * Crucible's.
 */
package dev.crucible.util;
