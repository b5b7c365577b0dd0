package syncer

import (
	"context"

	"github.com/siltsync/silt/index"
)

// Pipelined commits (format 4). A log commit is two round trips in
// series: its new shards, then the entry naming them. While one leader's
// entry is in flight, the next leader builds on the head that entry will
// be (index.Proposal.Announce), stores its own shards, and creates its entry as
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

// after is index.Proposal.After for a proposal on the log head head:
// when head is pred's speculation it waits for pred and returns it as
// landed. Nil when there is no pred to wait for.
func (pl pipeline) after(head index.Head) func(context.Context) (index.Head, error) {
	pred := pl.pred
	if pred != nil && !head.Same(pred.spec) {
		pred = nil // a rebuild on a head read afresh
	}
	if pred == nil {
		return nil
	}
	return func(ctx context.Context) (index.Head, error) {
		if pl.turn != nil {
			pl.turn.c.mu.Lock()
			hook := pl.turn.c.onWait
			pl.turn.c.mu.Unlock()
			if hook != nil {
				hook()
			}
		}
		h, err := pred.wait(ctx)
		if err != nil || !h.Same(head) {
			return h, err // index.Commit takes it for a lost race
		}
		return h, nil
	}
}

// announce is index.Proposal.Announce for a proposal whose shards sh
// holds: the entry about to be created, it hands the lead on with the
// head that entry will be (the state index.Commit encodes the entry
// from, so it is built once). Nil when the commit leads nothing.
func (pl pipeline) announce(sh *shards) func(index.Head) {
	if pl.turn == nil {
		return nil
	}
	return func(spec index.Head) { pl.turn.announce(spec, sh) }
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
