/**
 * What every route room shares of the HTTP API: JSON bodies read with their caps (refused ones drained), the error
 * body and the runtime entry; it knows no route and runs nothing.
 */
package dev.crucible.server.http;
