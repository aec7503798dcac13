/**
 * The HTTP front end: {@code CrucibleServer} with its one route table, the guard and token check before every route,
 * the mapping of every failure to the API's JSON error, health answers and shutdown, over the rooms below it; nothing
 * below depends on it.
 */
package dev.crucible.server;
