/**
 * The file-editing tools agents already call, over a session's files: Anthropic's text editor
 * ({@code str_replace_based_edit_tool}: view, create, str_replace, insert) and OpenAI's {@code apply_patch} with its
 * V4A diffs. Pure text work over {@link dev.crucible.session.edit.EditFiles}; it knows no sandbox and no HTTP.
 */
package dev.crucible.session.edit;
