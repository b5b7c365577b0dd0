// Package watch keeps a cache in sync continuously: the loop behind
// `silt sync --watch`, serve's POST /v1/watch and the TypeScript client's
// watch(). It has one job, deciding when to call the engine; every byte
// it moves goes through the Cache's own Pull and Push, so a watch is as
// crash-safe and as conflict-aware as the commands it repeats.
//
// # Steps
//
// [Run] first does what `silt sync` does (a pull, then a push that walks
// the whole cache), then repeats three kinds of step, one at a time:
//
//   - a push of the paths file-system events named (fsnotify, every
//     directory of the cache watched, new ones added as they appear),
//     once no event came for [Options.Debounce]: a burst of writes is one
//     push, one commit, and a file being written is pushed when it is
//     quiet, not half way (a file that changes during its push stays
//     dirty, and its last write's event brings another push);
//   - a pull every [Options.Poll]: the engine's conditional read of the
//     manifest, one request when nothing moved;
//   - a push that walks the whole cache every [Options.Walk], and soon
//     after the kernel reports dropped events: events can be lost, a
//     walk cannot. It sends no request when nothing changed.
//
// The cache's internal directory and paths the exclude rules keep out
// (the data root's .siltignore, [Options.Exclude]) are not watched.
//
// # Failures
//
// A step that fails is reported as an [Event] of [KindError] and tried
// again after a jittered exponential backoff capped at
// [Options.MaxBackoff]; the paths it had to push stay pending, so a
// network that goes away and comes back loses nothing. Run returns only
// when its context ends (nil: a clean stop; the running step was
// cancelled through the engine's own, crash-safe, cancellation) or on an
// error retrying cannot mend (a closed cache, an invalid option): a
// [*StepError].
//
// Local changes a stopped watch had not pushed yet are not lost either:
// the next sync, or the first step of the next watch, walks the whole
// cache and finds them.
package watch
