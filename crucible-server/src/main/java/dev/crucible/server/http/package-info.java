/**
 * What every route room shares of the HTTP API: JSON bodies read with their caps (refused ones drained), the error
 * body, the runtime entry and the small objects of answers, their fields in the order written ({@code JsonObject}); it
 * knows no route and runs nothing.
 */
package dev.crucible.server.http;
