/**
 * Who may call and how many at once: bearer tokens, the browser guard's Host, Origin and content-type rules, and the
 * admission's turns for stateless runs; it runs nothing on the engine and knows no route.
 */
package dev.crucible.server.access;
