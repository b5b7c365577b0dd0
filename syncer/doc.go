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
// The remote format lives in package [index] (FORMAT.md in the repository
// specifies it): data objects are immutable and named by their sha256; a
// manifest (.silt/manifest.json, the only object the protocol mutates,
// always by compare-and-swap) lists immutable shards by key range. A push
// hashes each file, uploads each new content once (create-if-absent: an
// object already there is the same bytes), then merges its changes onto the
// freshly read shards, each change only while the entry is still at the
// sha256 this cache last synced (otherwise a per-path conflict), writes the
// new shards and a history copy of the manifest it supersedes, and swaps the
// manifest. Shards split past the bound the manifest records (the creating
// cache's Config.ShardMaxEntries; every later writer uses the recorded one),
// so a scoped read costs max(scope, shard bound) whatever the shape of the
// paths. Each cache
// remembers the highest manifest it saw and refuses a rollback
// ([ErrRollback]).
//
// # Phases
//
// A push is orchestrated by push.go, which enters each phase file once, in
// run order: plan.go (walk the dirty part of the cache, hash what a stat
// cannot settle), check.go (read the committed index where the plan
// touches it and decide uploads, deletions and conflicts), upload.go
// (upload each new content once; pack.go packs small files), groupcommit.go
// (batch the commits of concurrent pushes; commit.go merges onto the fresh
// shards and compare-and-swaps the manifest), finish.go (count the outcome
// and record it in the local state, state.go). A pull runs pull.go (plan
// per shard, then downloads through install.go, then removals and pruning
// of emptied directories).
//
// Stats.Phases times them: a pull's manifest, shards, walk and transfer; a
// push's walk, index, upload and commit. With Config.Tracer each operation
// is an OpenTelemetry span under the caller's and each phase a child span
// with its requests and bytes (trace.go; see ExampleConfig_tracer).
//
// # Why the seed bugs cannot happen
//
//   - A scoped pull reads the manifest and only the shards whose ranges meet
//     the scope ([index.Manifest.Cover]); it never lists and stats only paths in
//     scope.
//   - Directories and files map to shards through the same range function;
//     nothing parses a path to guess a shard.
//   - "Fully synced" is never one number: this machine records, per shard
//     object and range, that it reconciled every entry; a scoped pull
//     records only shards inside its scope, and a push records only shards
//     it rebuilt from ones already reconciled, within their ranges (a shard
//     widened over an emptied neighbour is not). A push with nothing to send
//     records nothing and sends nothing.
//   - Per-machine state (local mtimes, hydration, dirty marks, the highest
//     manifest seen) lives in a bbolt file under DIR/.silt and never goes to the
//     store, so pull then push uploads nothing.
//
// # Concurrency
//
// One Syncer serves many operations at once. Each declares a scope before
// it runs: a pull its Scope ("" is everything), a push or PreparePush its
// dirty set or PushOptions.Paths (everything when the marks overflowed, on
// MarkAllDirty or with All), CommitPush the paths of its manifest,
// HydrateFile and MarkDirty their path; Status and PreviewPush only read.
// Operations whose scopes are disjoint run in parallel; overlapping ones (a
// directory and a file under it, anything and an unscoped operation) run
// in arrival order: a request is granted only when it overlaps no request
// ahead of it, held or waiting, so a later operation never overtakes an
// earlier one and nothing starves. Close waits for every operation that
// arrived before it.
//
// What operations share is guarded apart from the scopes: the cached
// manifest and the highest manifest seen (rollback detection compares a
// read with what was seen when its request was sent, so a read overtaken
// by a concurrent commit is not a rollback); the local state (bbolt: one
// writer, many readers, and no transaction spans a request); the shard
// cache (shards are immutable); each operation's own Stats.
//
// Pushes that reach the commit step while another commit is in flight are
// merged into one manifest compare-and-swap (group commit): the first to
// arrive commits at once; those that queue meanwhile are taken together by
// the first of them when it is done, with one new shard set and one seq.
// Each caller gets its own Stats and its own conflicts; Stats.Commit says
// how many pushes the commit carried and how many compare-and-swaps it
// took (the commit's requests are counted in the Stats of the push that
// led it). If the combined commit fails, each push commits alone. Commits
// under a Fence or a CommitLock always go alone.
//
// # Local state
//
// Every access to the cache goes through one os.Root on Config.Dir: the
// kernel refuses a path that leaves the directory through a symlink or
// "..". (A symlink that stays inside the directory is followed; silt itself
// syncs regular files only and never creates links.)
//
// DIR/.silt/state.db holds, per path, the size, sha256 (the content last
// synced), local mtime and hydration of what the cache holds; the shards it
// reconciled; a verified copy of shards it has read (they are immutable);
// the dirty marks with a cap ([Config].DirtyCap) past which the next push
// walks everything. A file's record is binary, in pages packed full (about
// 150 bytes a file), because a push of a large cache reads all of them; a
// state of an earlier build, whose records were JSON, is converted the
// first time it is opened. A state file that cannot be read is moved aside
// and silt re-verifies every file by hash; it never deletes because of it.
package syncer
