/**
 * {@code crucible image} (pull, ls, inspect, rm, prune, import, build) on the local image store, with pull progress and
 * one exit code per failure; it never starts a sandbox except for a build's steps.
 */
package dev.crucible.cli.image;
