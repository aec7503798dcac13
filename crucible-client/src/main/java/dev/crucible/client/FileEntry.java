package dev.crucible.client;

/** One entry of a session's file listing; {@code type} is {@code file}, {@code directory}, {@code symlink} or {@code other}. */
public record FileEntry(String path, String type, long size, String modifiedAt) {}
