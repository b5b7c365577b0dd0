// Package syncer is silt's one sync engine: it keeps a local cache
// directory and a bucket (any [backend.Backend]) in sync, so that a fix
// lands once for every store.
//
// # Operations
//
// A host opens a [Syncer] on a directory and a store and calls:
//
//   - [Syncer.Pull] with a scope (paths, files or directories) to bring in
//     remote changes; [PullOptions].MetadataOnly records large files
//     without fetching them, and [Syncer.HydrateFile] fetches one later.
//   - [Syncer.MarkDirty] before or after it writes a path (absent at push
//     time means deleted), or [Syncer.MarkAllDirty].
//   - [Syncer.Push] to upload what changed and commit it, or
//     [Syncer.PreparePush] outside its global lock and [Syncer.CommitPush]
//     under it. [Syncer.PreviewPush] counts without a request.
//
// Every operation returns [Stats]: files by outcome, bytes, requests per
// verb, phase timings, the manifest sequence; it marshals to the JSON the
// command line prints.
//
// # The index
//
// Data objects live at their real paths. The index is a one-level B+tree
// over the sorted path space: a manifest (.silt/manifest.json, the only
// object the protocol mutates, always by compare-and-swap) lists immutable
// shards by key range, each named by the hash of its bytes. A commit writes
// new shards for the ranges it touched and swaps the manifest; on a lost
// race it re-reads and re-merges only its own changes. Shards split past
// Config.ShardMaxEntries, so a scoped read costs max(scope, shard bound)
// whatever the shape of the paths. FORMAT.md in the repository specifies
// the format.
//
// # Why the seed bugs cannot happen
//
//   - A scoped pull reads the manifest and only the shards whose ranges meet
//     the scope ([Manifest] cover); it never lists and stats only paths in
//     scope.
//   - Directories and files map to shards through the same range function;
//     nothing parses a path to guess a shard.
//   - "Fully synced" is never one number: this machine records, per shard
//     object and range, that it reconciled every entry; a scoped pull
//     records only shards inside its scope, and a push records only shards
//     it rebuilt from ones already reconciled. A push with nothing to send
//     records nothing and sends nothing.
//   - Per-machine state (local mtimes, hydration, dirty marks, upload
//     intents) lives in a bbolt file under DIR/.silt and never goes to the
//     store, so pull then push uploads nothing.
//
// # Local state
//
// Every access to the cache goes through one os.Root on Config.Dir: the
// kernel refuses a path that leaves the directory through a symlink or
// "..". (A symlink that stays inside the directory is followed; silt itself
// syncs regular files only and never creates links.)
//
// DIR/.silt/state.db holds, per path, the size, sha256, local mtime,
// remote version and hydration of what the cache holds; the shards it
// reconciled; a verified copy of shards it has read (they are immutable);
// the dirty marks with a cap ([Config].DirtyCap) past which the next push
// walks everything. A state file that cannot be read is moved aside and
// silt re-verifies every file by hash; it never deletes because of it.
package syncer
