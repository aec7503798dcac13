/**
 * What {@code /readyz} reports of each part (a state per part) and the count of stuck or dead parts replaced; depends
 * on nothing of Crucible's.
 */
package dev.crucible.health;
