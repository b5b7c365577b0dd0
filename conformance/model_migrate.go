package conformance

import (
	"slices"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/index"
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
	if !m.expect(propMigrate, err == nil && h.Manifest.Format == index.DeltaFormat, "head after the migration: %v", err) {
		return
	}
	m.format = index.DeltaFormat
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
