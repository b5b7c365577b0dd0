// Command silt keeps a local cache directory in sync with an object store
// (S3, GCS, a directory, or any gocloud bucket), through a sharded index
// committed by compare-and-swap.
//
// # Quick start
//
//	go run ./cmd/silt demo
//
// runs two "machines" against a file:// bucket in a temporary directory and
// prints what each step did.
//
// # Usage
//
//	silt init [--dir DIR] [--namespace NS] URL    bind DIR to a bucket (DIR/.silt/config.json)
//	silt pull [--dir DIR] [--scope PATH]... [--lazy GLOB]... [--metadata-only] [--reanchor] [--exclude PAT]...
//	silt push [--dir DIR] [--path PATH]... [--dry-run] [--max-delete N] [--lock KEY]
//	silt sync [--dir DIR] [--watch [--poll 1s] [--debounce 200ms] [--walk 1m]]  pull, then push; --watch: until Ctrl-C
//	silt status [--dir DIR] [--offline]
//	silt resolve [--dir DIR] --keep-local|--take-remote PATH...|--all
//	silt hydrate [--dir DIR] PATH...
//	silt verify [URL]                             reachability and conditional-write probe
//	silt lock acquire|release|inspect|force-release KEY
//	silt ls [URL] [PREFIX]                        read through the committed index
//	silt cat [URL] PATH                           read at the committed version, verified
//	silt log [URL]                                the snapshots still readable
//	silt check [URL] [--data] [--seq N]           every referenced object exists (and verifies)
//	silt export [URL] DEST [--seq N] [--prefix P] a snapshot at real paths
//	silt gc [URL] [--dry-run] [--older-than 1h]
//	silt recover [URL] [--seq N] [--dry-run]      re-commit the newest readable snapshot (or N)
//	silt migrate [URL] [--dry-run]                turn an older bucket into the default format, online
//	silt key list|add|rotate|remove [ID] [URL]     the passphrases of an encrypted bucket (init --encrypt)
//	silt conformance URL                          the backend conformance suite, live
//	silt demo [--dir DIR]
//	silt version
//	silt serve [--dir DIR]                        own the cache, serve a local JSON API
//	silt completion bash|zsh|fish|powershell      shell completion script
//
// The reference of every command and flag is docs/cli (and the man pages
// docs/man), generated from the command table in commands.go; a test fails
// when they, or this list, miss a command. The bucket commands take
// --dir (or run inside a cache) instead of a URL.
//
// Flags and arguments may come in any order; "--" ends the flags. Every
// command takes --help (with an example) and --json, which prints exactly
// one JSON object on stdout, also on failure ({"op", "error", "hint",
// "exit"}). pull, push, sync and hydrate print the syncer's operation
// statistics ({"op", "seq", "files", "bytes", "requests", "local",
// "phases", "ms"}); sync nests "pull" and "push" and adds their sums.
// sync --watch is the exception: with --json it prints one JSON line per
// step that changed something (a watch.Event: {"kind", "trigger",
// "stats", ...}), and it exits 0 after Ctrl-C.
//
// # Exit codes
//
//	0  success
//	1  error (one line on stderr saying what and where, and a hint line when the fix is obvious)
//	2  usage
//	3  refused by a guard (--max-delete, a held lock, a stale nonce) or
//	   finished with conflicts (the local copies were kept)
//
// # Stores
//
// The URL schemes are those of the stores linked in by backends.go: file://,
// mem:// (per process), s3://, gs:// and blob+<gocloud scheme>://.
//
// # Push and deletions
//
// Without --path, push walks the whole cache: a file this cache synced
// that is now absent locally is deleted remotely, at most --max-delete
// (default 100) per push; --max-delete 0 (or -1) is no limit, as
// maxDelete 0 is in the library and the serve API. With --path, only the marked paths (and any
// marks left by an earlier failed push) are pushed.
//
// # Locks
//
// Lock objects live at .silt/locks/KEY in the bucket (namespace root).
// The command ends after acquire, so the lock cannot heartbeat: it lasts
// --ttl unless released with the nonce acquire printed.
package main
