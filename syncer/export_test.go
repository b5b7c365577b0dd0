package syncer

import "strings"

// ObserveLocks makes s report each scope lock request: event "wait" when
// it queues behind another, "run" when it is granted. scope is "*" for
// everything, else its paths joined by ",".
func ObserveLocks(s *Syncer, fn func(scope, event string)) {
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	s.locks.observe = func(sc lockScope, event string) {
		name := strings.Join(sc.paths, ",")
		if sc.all {
			name = "*"
		}
		fn(name, event)
	}
}

// ObserveCommitQueue makes s report the length of the group-commit queue
// each time a push queues behind a running commit.
func ObserveCommitQueue(s *Syncer, fn func(n int)) {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	s.group.onQueue = fn
}

// ObservePipelineWait makes s call fn each time a commit, its shards
// stored, begins to wait for the commit in flight it built on.
func ObservePipelineWait(s *Syncer, fn func()) {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	s.group.onWait = fn
}

// Hashes returns how many files s has hashed since it was opened.
func Hashes(s *Syncer) int64 { return s.local.hashes.Load() }

// FailOpen makes s's opens of data files for reading fail with what fn
// returns for their path (nil: open it). Set it before an operation.
func FailOpen(s *Syncer, fn func(path string) error) { s.local.failOpen = fn }
