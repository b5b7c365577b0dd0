package syncer

import (
	"context"
	"maps"
	"sync"

	"github.com/siltsync/silt/index"
)

// CommitStats describes the manifest compare-and-swap that carried a
// push's changes.
type CommitStats struct {
	// Attempts counts the compare-and-swaps of the manifest sent (1 when
	// the first won; 0 when nothing needed writing).
	Attempts int `json:"attempts"`
	// Batch counts the pushes merged into that one commit (group commit);
	// 1 when the push committed alone. The commit's requests are counted
	// in the Stats of the push that led it.
	Batch int `json:"batch"`
	// Pipelined reports that the commit was built on another commit of
	// this cache while that one's log entry was in flight, and landed
	// right after it (format 4; FORMAT.md, "Pipelined commits").
	Pipelined bool `json:"pipelined,omitempty"`
}

// committer merges the commits of pushes that reach the commit step at the
// same time into one manifest compare-and-swap (group commit). The first
// to arrive leads: it commits at once with whatever is queued (often only
// itself); pushes arriving meanwhile queue, and when the leader is done the
// first of them leads the next commit with every change that queued. No
// timer decides anything.
type committer struct {
	mu    sync.Mutex
	busy  bool // a leader is committing
	queue []*commitReq
	// last is the manifest the latest commit here wrote. A push that
	// queued behind that commit planned against an older one; committing
	// on last instead saves a lost compare-and-swap (its backoff, history
	// and shard writes) and a re-read whenever no other writer came in
	// between (see freshest).
	last *index.Head
	// tail is the latest log commit whose entry is about to be created or
	// in flight: the next leader builds on it (pipeline.go).
	tail *inflight
	// onQueue, when set (by tests), is called with the queue length after
	// each push queues behind a running commit.
	onQueue func(n int)
	// onWait, when set (by tests), is called when a commit, its shards
	// stored, begins to wait for the commit in flight it built on.
	onWait func()
}

// commitReq is one push waiting to commit.
type commitReq struct {
	o    *op
	sh   *shards
	ch   changeSet
	head *index.Head
	wake chan struct{} // closed when the outcome is set, or on promotion
	// Set under committer.mu before wake closes.
	lead  bool      // this request leads the next commit
	pred  *inflight // the commit in flight when it was made to lead
	taken bool      // a leader took it into its batch
	alone bool      // the combined commit failed: commit alone
	res   commitResult
	err   error
}

// commitGrouped commits ch, merged with the changes of concurrent pushes
// when there are any. Commits under a fence or a commit lock go alone.
func (s *Syncer) commitGrouped(ctx context.Context, o *op, sh *shards, ch changeSet, first *index.Head, fence *Fence) (commitResult, error) {
	if fence != nil || !o.backend().Capabilities().ConditionalPut {
		return s.commitAlone(ctx, o, sh, ch, first, fence, pipeline{})
	}
	c := &s.group
	r := &commitReq{o: o, sh: sh, ch: ch, head: first, wake: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, r)
	if !c.busy {
		c.busy, r.lead, r.pred = true, true, c.tail
	}
	leader, n, hook := r.lead, len(c.queue), c.onQueue
	c.mu.Unlock()
	if !leader {
		if hook != nil {
			hook(n)
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			c.mu.Lock()
			if !r.taken {
				c.withdrawLocked(r)
				c.mu.Unlock()
				return commitResult{}, ctx.Err()
			}
			c.mu.Unlock()
			<-r.wake // in a batch already: its outcome is on the way
		}
		c.mu.Lock()
		lead, alone := r.lead && !r.taken, r.alone
		c.mu.Unlock()
		switch {
		case alone:
			return s.commitAlone(ctx, o, sh, ch, nil, nil, pipeline{})
		case !lead:
			return r.res, r.err
		}
	}
	c.mu.Lock()
	batch := c.queue
	c.queue = nil
	for _, m := range batch {
		m.taken = true
	}
	turn := &leadTurn{c: c, me: &inflight{done: make(chan struct{})}}
	pl := pipeline{pred: r.pred, turn: turn}
	c.mu.Unlock()
	turn.me.head, turn.me.err = s.commitBatch(ctx, o, batch, pl)
	close(turn.me.done)
	c.mu.Lock()
	for _, m := range batch {
		if m.err == nil && !m.alone && !m.res.noop && m.res.head.Manifest != nil {
			c.newerLocked(&m.res.head)
		}
	}
	if c.tail == turn.me {
		c.tail = nil
	}
	if !turn.over {
		turn.over = true
		c.handOnLocked()
	}
	for _, m := range batch {
		if m != r {
			close(m.wake)
		}
	}
	alone := r.alone
	c.mu.Unlock()
	if alone {
		return s.commitAlone(ctx, o, sh, ch, nil, nil, pipeline{})
	}
	return r.res, r.err
}

// commitAlone commits ch by itself, as a batch of one.
func (s *Syncer) commitAlone(ctx context.Context, o *op, sh *shards, ch changeSet, first *index.Head, fence *Fence, pl pipeline) (commitResult, error) {
	res, err := s.commit(ctx, o, sh, ch, first, fence, pl)
	res.batch = 1
	return res, err
}

// newerLocked records h as the latest manifest written, unless a newer
// one is recorded.
func (c *committer) newerLocked(h *index.Head) {
	if c.last == nil || h.Manifest.Seq > c.last.Manifest.Seq {
		hh := *h
		c.last = &hh
	}
}

// freshest returns what a lone push that read h (at plan time) commits
// on: the manifest this committer wrote last when it is newer than h and
// still the newest this cache has seen (so no pull since saw a newer one,
// whose writer may have collected its shards); h otherwise.
func (s *Syncer) freshest(h *index.Head) *index.Head {
	c := &s.group
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last == nil || h == nil || h.Manifest == nil || last.Manifest.Seq <= h.Manifest.Seq {
		return h
	}
	if sn := s.seenNow(); sn.seq != last.Manifest.Seq || sn.hash != manifestHash(last.Data) {
		return h
	}
	return last
}

// handOnLocked passes the lead to the first queued request, or frees it.
func (c *committer) handOnLocked() {
	if len(c.queue) > 0 {
		c.promoteLocked()
	} else {
		c.busy = false
	}
}

// promoteLocked makes the first queued request lead the next commit.
func (c *committer) promoteLocked() {
	next := c.queue[0]
	next.lead, next.pred = true, c.tail
	close(next.wake)
}

// withdrawLocked removes a request that gave up before any leader took it;
// a request promoted meanwhile hands the lead on.
func (c *committer) withdrawLocked(r *commitReq) {
	for i, q := range c.queue {
		if q == r {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	if !r.lead {
		return
	}
	c.handOnLocked()
}

// commitBatch commits the batch as one compare-and-swap, under the
// leader's context and request counter, and sets each request's outcome;
// it returns the head the commit left, or its error. A batch of one
// commits exactly as a lone push does. When the combined commit fails,
// every request is marked to commit alone. The commit builds on pl.pred
// when there is one (pipeline.go).
func (s *Syncer) commitBatch(ctx context.Context, o *op, batch []*commitReq, pl pipeline) (index.Head, error) {
	if len(batch) == 1 {
		return s.commitOne(ctx, batch[0], pl)
	}
	// Scope locks keep concurrent pushes' paths apart; a request that
	// shares a path with an earlier one all the same commits alone.
	owner := map[string]*commitReq{}
	var members []*commitReq
	ch := changeSet{upserts: map[string]index.Entry{}, bases: map[string]string{}, removals: map[string]string{}, proofs: map[string]string{}}
	sh := s.newShards(o.backend())
	for _, r := range batch {
		if pathsMeet(owner, r.ch) {
			r.alone = true
			continue
		}
		for p := range r.ch.upserts {
			owner[p] = r
		}
		for p := range r.ch.removals {
			owner[p] = r
		}
		maps.Copy(ch.upserts, r.ch.upserts)
		maps.Copy(ch.bases, r.ch.bases)
		maps.Copy(ch.removals, r.ch.removals)
		maps.Copy(ch.proofs, r.ch.proofs)
		sh.absorb(r.sh)
		members = append(members, r)
	}
	if len(members) == 1 {
		return s.commitOne(ctx, members[0], pl)
	}
	if pl.pred != nil {
		sh.absorb(pl.pred.sh)
	}
	res, err := s.commit(ctx, o, sh, ch, pl.first(nil), nil, pl)
	if err != nil {
		for _, r := range members {
			r.alone = true
		}
		return index.Head{}, err
	}
	claims := shardClaims(res, owner)
	for _, r := range members {
		mine := commitResult{head: res.head, written: res.written, noop: res.noop, attempts: res.attempts, batch: len(members), pipelined: res.pipelined,
			skipped: map[string]bool{}, conflicts: map[string]string{}, rebased: map[string]string{}}
		for p := range r.ch.removals {
			if res.skipped[p] {
				mine.skipped[p] = true
			}
		}
		for p := range r.ch.upserts {
			if reason, ok := res.conflicts[p]; ok {
				mine.conflicts[p] = reason
			}
		}
		for id, base := range res.rebased {
			if c, ok := claims[id]; !ok || c == r {
				mine.rebased[id] = base
			}
		}
		// The new shards go to each member's cache, so its finish stores
		// them locally as a lone push's does.
		for id := range res.written {
			r.sh.remember(id, sh.bytes(id), sh.entries(id))
		}
		r.res = mine
	}
	return res.head, nil
}

// commitOne commits r's changes as a lone push does, on pred's
// speculated head when there is one (with the shards it names at hand).
func (s *Syncer) commitOne(ctx context.Context, r *commitReq, pl pipeline) (index.Head, error) {
	if pl.pred != nil {
		r.sh.absorb(pl.pred.sh)
	}
	r.res, r.err = s.commitAlone(ctx, r.o, r.sh, r.ch, pl.first(s.freshest(r.head)), nil, pl)
	return r.res.head, r.err
}

// pathsMeet reports whether ch changes a path already owned.
func pathsMeet(owner map[string]*commitReq, ch changeSet) bool {
	for p := range ch.upserts {
		if owner[p] != nil {
			return true
		}
	}
	for p := range ch.removals {
		if owner[p] != nil {
			return true
		}
	}
	return false
}

// shardClaims returns, for each new shard holding changes applied for
// exactly one member, that member; a shard holding changes of several is
// mapped to nil. A member's push may record a new shard as reconciled only
// when the shard differs from its base by that member's changes alone:
// the others' records are written by their own finish, maybe never.
// Shards absent from the map hold no applied change (parts of a split).
func shardClaims(res commitResult, owner map[string]*commitReq) map[string]*commitReq {
	claims := map[string]*commitReq{}
	m := res.head.Manifest
	if res.noop || len(m.Shards) == 0 {
		return claims
	}
	for p, r := range owner {
		if _, conflicted := res.conflicts[p]; conflicted || res.skipped[p] {
			continue
		}
		id := m.Shards[m.ShardFor(p)].ID
		if c, ok := claims[id]; ok && c != r {
			claims[id] = nil
		} else if !ok {
			claims[id] = r
		}
	}
	return claims
}
