// Package index is silt's remote format (format 3, specified in FORMAT.md):
// the manifest, the immutable shards and their entries, content-addressed
// data object names, manifest history, the scope cover, a snapshot reader,
// consistency checks and garbage collection. It knows nothing of local
// directories; package syncer is the engine that uses it.
//
// # Layout
//
// Under a namespace root: .silt/manifest.json (the only mutable object,
// always written by compare-and-swap), .silt/shards/{id}.json (immutable,
// named by their hash), .silt/objects/{sha[:2]}/{sha} (immutable data,
// named by content: [ObjectKey]), .silt/manifests/{seq}.json (a copy of
// each superseded manifest: [HistoryKey]).
//
// A bucket created in [LogFormat] commits each seq as its own object,
// .silt/log/{seq}.json ([LogKey]), manifest.json being a hint; one created
// in [DeltaFormat] writes a delta there instead of the whole manifest, and
// paged checkpoints of the whole shard list under .silt/checkpoints/
// ([CheckpointKey]) and .silt/pages/ ([PageKey]), so a commit's index
// bytes grow with what it changed.
//
// # Reading
//
// [OpenSnapshot] reads the current manifest and [OpenSnapshotAt] an older
// one still in the history; [Snapshot.Walk] reads only the shards that
// [Manifest.Cover] selects for a prefix; [Open] returns a verifying reader
// of one entry's bytes; [Snapshot.Check] verifies a whole snapshot; [Log]
// lists the history.
//
// # Bounds and errors
//
// Decoders refuse hostile input with typed errors: a manifest or shard past
// [MaxManifestBytes] or [MaxShardBytes] ([ErrIndexTooLarge], read no
// further), entries outside their shard's range or with a bad sha256 or
// size ([ErrCorruptIndex]), paths [ValidPath] refuses, format 1
// ([ErrOlderFormat]) and newer formats ([ErrNewerFormat]).
//
// # A damaged remote
//
// A missing manifest beside history copies is [ErrManifestMissing], never
// an empty index; [Recover] re-commits the newest readable snapshot (or a
// named one) as a new commit above every seq the bucket shows.
//
// # Garbage collection
//
// [GC] marks from the current manifest and every manifest current within
// the grace period, and sweeps unreferenced objects, shards and history
// copies older than it.
package index
