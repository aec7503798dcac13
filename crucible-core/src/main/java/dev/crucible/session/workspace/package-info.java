/**
 * A session's files as the host reaches them: {@code openat2} relative to the workspace's descriptor as the session's
 * uid, the loop-mounted quota image they live on (grown in allocated steps up to the quota by {@code
 * WorkspaceGrowth}; moved whole to another uid block by {@code DiskOwners}, which
 * reads the blocks' layout from {@code LaunchCommand}), and the one mapping of a full disk to {@code 507
 * data_dir_full}; knows nothing of sessions' records, interpreters or running sandboxes.
 */
package dev.crucible.session.workspace;
