package syncer

import (
	"context"
	"time"

	"github.com/siltsync/silt/index"
)

// Pipelined commits (format 4). A log commit is two round trips in
// series: its new shards, then the entry naming them. While one leader's
// entry is in flight, the next leader builds on the head that entry will
// be (index.Speculate), stores its own shards, and creates its entry as
// soon as the first has landed (index.Proposal.After): queued pushes wait
// one round trip a commit instead of two. A speculation that fails (the
// entry in flight lost its race, or landed otherwise) is a lost race: the
// successor reads the head again and rebuilds, so no entry is ever
// created on one that did not land.

// inflight is a log commit about to create its entry: its successor may
// build on spec, and commits once done closes with head being spec.
type inflight struct {
	spec index.Head
	sh   *shards // holds the shards spec names, for the successor's merge
	done chan struct{}
	head index.Head // set before done closes: the head this commit left
	err  error
}

// wait returns the head the commit in flight landed as.
func (f *inflight) wait(ctx context.Context) (index.Head, error) {
	select {
	case <-f.done:
		return f.head, f.err
	case <-ctx.Done():
		return index.Head{}, ctx.Err()
	}
}

// pipeline is what one commit takes part in: pred, the commit in flight
// it builds on (nil: none), and turn, through which it hands the lead on
// when its own entry is about to be created (nil: it leads nothing).
type pipeline struct {
	pred *inflight
	turn *leadTurn
}

// first is the head the commit builds on: pred's speculated head, or h.
func (pl pipeline) first(h *index.Head) *index.Head {
	if pl.pred != nil {
		spec := pl.pred.spec
		return &spec
	}
	return h
}

// after is index.Proposal.After for a proposal of next on the log head
// head, whose shards sh holds: when head is pred's speculation it waits
// for pred and returns it as landed; then, the entry about to be
// created, it hands the lead on with the head that entry will be. Nil
// when there is neither to do.
func (pl pipeline) after(head index.Head, next *index.Manifest, sh *shards, now func() time.Time) func(context.Context) (index.Head, error) {
	pred := pl.pred
	if pred != nil && !head.Same(pred.spec) {
		pred = nil // a rebuild on a head read afresh
	}
	if pred == nil && pl.turn == nil {
		return nil
	}
	return func(ctx context.Context) (index.Head, error) {
		h := head
		if pred != nil {
			if pl.turn != nil {
				pl.turn.c.mu.Lock()
				hook := pl.turn.c.onWait
				pl.turn.c.mu.Unlock()
				if hook != nil {
					hook()
				}
			}
			var err error
			if h, err = pred.wait(ctx); err != nil || !h.Same(head) {
				return h, err // index.Commit takes it for a lost race
			}
		}
		if pl.turn != nil {
			pl.turn.announce(index.Speculate(h, next, now()), sh)
		}
		return h, nil
	}
}

// leadTurn is one leader's hold on the committer: it hands the lead on
// once, when its entry is about to be created (announce) or, when it
// never gets there, as its commit ends.
type leadTurn struct {
	c    *committer
	me   *inflight
	over bool // under c.mu: the lead was handed on
}

// announce hands the lead on: the next leader builds on spec.
func (lt *leadTurn) announce(spec index.Head, sh *shards) {
	c := lt.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if lt.over {
		return
	}
	lt.over = true
	lt.me.spec, lt.me.sh = spec, sh
	c.tail = lt.me
	c.handOnLocked()
}
