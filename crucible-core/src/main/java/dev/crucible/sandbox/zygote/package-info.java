/**
 * The zygotes that fork Python's warm-pool launches (docs/zygote.md): starting, proving, watching and replacing them,
 * and their children seen as processes; never chooses a slot, supervises a run or runs an image's code.
 */
package dev.crucible.sandbox.zygote;
