package conformance

import (
	"errors"
	"slices"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
)

// propMigrate is what the migration actor checks, beside every property
// the steps around it check.
const propMigrate property = "a migration changes no entry, keeps every snapshot listed and readable, and leaves the bucket in the default format"

// actMigrate migrates the bucket to the default format online, as silt
// migrate does from another machine: paused at a drawn request while
// caches pull, write and push beside it (a writer mid-push, a peer that
// commits between its steps), then let go. On a bucket already in the
// default format it only finishes what it finds.
func (m *modelRun) actMigrate(t *rapid.T) {
	var at int64
	if rapid.Bool().Draw(t, "pauseMigrate") {
		at = rapid.Int64Range(1, 12).Draw(t, "migratePauseAt")
	}
	m.logf("migrate from format %d, paused at its request %d (0: not paused)", m.format, at)
	p := &gcPause{Backend: m.store, at: at, reached: make(chan struct{}), release: make(chan struct{})}
	if at == 0 {
		p.at = -1 // gcPause's 0 pauses at the first delete; a migration deletes nothing
	}
	var rep index.MigrateReport
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, err = index.Migrate(m.ctx, p, index.MigrateOptions{Now: m.gc.clock.Now})
	}()
	before := m.committed
	select {
	case <-p.reached:
		released := false
		defer func() { // a failing step still lets the migration finish
			if !released {
				close(p.release)
				<-done
			}
		}()
		m.committed = m.snapshot() // paused past its commit point, it has committed (the same entries)
		if h, err := index.ReadHead(m.ctx, m.store, nil); err == nil && h.Version != "" {
			m.format = h.Manifest.Format // the writers beside see the bucket as it is now
		}
		if !m.expect(propMigrate, sameEntries(m.committed.Entries, before.Entries), "a paused migration changed the entries") {
			return
		}
		for range rapid.IntRange(1, 3).Draw(t, "besideMigrate") {
			switch rapid.SampledFrom([]string{"pull", "write+push", "write+push", "restart"}).Draw(t, "actor") {
			case "pull":
				m.actPull(t)
			case "restart":
				m.actRestart(t)
			default:
				m.actWrite(t)
				m.actPush(t)
			}
		}
		before = m.snapshot()
		released = true
		close(p.release)
		<-done
	case <-done:
	}
	if err != nil {
		m.expect(propNoSpuriousError, false, "migrate: %v", err)
		return
	}
	after := m.snapshot()
	m.expect(propMigrate, sameEntries(after.Entries, before.Entries) && (after.Seq == before.Seq || after.Seq == before.Seq+1),
		"migration (report %+v) changed the committed index: seq %d -> %d", rep, before.Seq, after.Seq)
	if after.Seq == 0 || rep.Empty {
		return // nothing committed when it looked: nothing to migrate
	}
	h, err := index.ReadHead(m.ctx, m.store, nil)
	if !m.expect(propMigrate, err == nil && h.Manifest.Format == index.DefaultFormat, "head after the migration: format %d, %v", h.Manifest.Format, err) {
		return
	}
	m.format = index.DefaultFormat
	log, err := index.Log(m.ctx, m.store)
	if !m.expect(propMigrate, err == nil, "log after the migration: %v", err) {
		return
	}
	var listed []uint64
	for _, le := range log {
		listed = append(listed, le.Seq)
	}
	for _, v := range m.history {
		m.expect(propMigrate, v.Seq == 0 || slices.Contains(listed, v.Seq), "snapshot %d is not listed after the migration (log %v)", v.Seq, listed)
	}
}

// actOlderPeer is a peer running an older silt on a bucket an older silt
// created: it commits in that format (internal/legacy) while the bucket
// is in it, a drawn path with new bytes in shared mode and an empty change
// otherwise (owned paths are their cache's alone), and is refused with
// ErrNewerFormat, changing nothing, once the bucket is migrated.
func (m *modelRun) actOlderPeer(t *rapid.T) {
	if m.older == 0 {
		t.Skip("this silt created the bucket")
	}
	files := map[string][]byte{}
	var p string
	if m.shared && rapid.Bool().Draw(t, "olderPeerWrites") {
		d := m.drawCache(t, "olderPeerAs")
		p = m.drawPath(t, d)
		files[p] = []byte(m.content(d, p))
	}
	m.logf("older silt (format %d) commits %q", m.older, p)
	before := m.committed
	_, err := legacy.Push(m.ctx, m.store, m.older, files)
	after := m.snapshot()
	m.committed = after
	if m.format == index.DefaultFormat {
		m.expect(propMigrate, errors.Is(err, index.ErrNewerFormat) && after.Seq == before.Seq,
			"an older silt's commit on the migrated bucket: %v (seq %d -> %d)", err, before.Seq, after.Seq)
		return
	}
	m.expect(propNoSpuriousError, err == nil, "older silt's commit: %v", err)
}
