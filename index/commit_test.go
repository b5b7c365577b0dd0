package index_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// limited reports a per-key mutation limit and records when each manifest
// write was sent.
type limited struct {
	backend.Backend
	perSec float64
	mu     sync.Mutex
	puts   []time.Time
}

func (l *limited) Capabilities() backend.Capabilities {
	c := l.Backend.Capabilities()
	c.MaxMutationsPerKeyPerSecond = l.perSec
	return c
}

func (l *limited) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if key == index.ManifestKey {
		l.mu.Lock()
		l.puts = append(l.puts, time.Now())
		l.mu.Unlock()
	}
	return l.Backend.Put(ctx, key, body, size, cond)
}

// bump proposes the base's successor with no other change.
func bump(_ context.Context, base index.Head) (index.Proposal, error) {
	m := *base.Manifest
	m.Format, m.Seq = index.FormatVersion, base.Manifest.Seq+1
	return index.Proposal{Next: &m}, nil
}

func readHead(t *testing.T, b backend.Backend) index.Head {
	t.Helper()
	h, err := index.ReadManifest(context.Background(), b, backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestCommit_LostAck_SettlesByReadBack(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Nth: 1, Mode: wrap.FailAfter})
	res, err := index.Commit(context.Background(), f, readHead(t, b), bump, index.CommitOptions{})
	if err != nil {
		t.Fatalf("commit after a lost acknowledgement: %v", err)
	}
	if res.Attempts != 1 || res.Head.Manifest.Seq != 2 || readHead(t, b).Manifest.Seq != 2 {
		t.Fatalf("attempts %d, seq %d: want one write landing seq 2", res.Attempts, res.Head.Manifest.Seq)
	}
}

func TestCommit_FailedWrite_RetriesAfterReadBack(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Nth: 1, Mode: wrap.FailBefore})
	res, err := index.Commit(context.Background(), f, readHead(t, b), bump, index.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || readHead(t, b).Manifest.Seq != 2 {
		t.Fatalf("attempts %d: want 2 (the failed write was read back as not landed, then retried)", res.Attempts)
	}
}

func TestCommit_Budget_SaysAttemptsAndWhy(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Mode: wrap.FailBefore})
	_, err := index.Commit(context.Background(), f, readHead(t, b), bump, index.CommitOptions{Attempts: 3})
	if !errors.Is(err, index.ErrCommitContention) || !strings.Contains(err.Error(), "3 attempts") || !strings.Contains(err.Error(), "3 unknown outcomes") {
		t.Fatalf("err = %v, want ErrCommitContention naming 3 attempts and their outcomes", err)
	}
	if readHead(t, b).Manifest.Seq != 1 {
		t.Fatal("a failed commit changed the manifest")
	}
}

func TestCommit_LostRace_RebuildsOnFreshBase(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	stale := readHead(t, b)
	commit(t, b, 2, map[string]string{"a": "y"}) // another writer won
	var bases []uint64
	build := func(ctx context.Context, base index.Head) (index.Proposal, error) {
		bases = append(bases, base.Manifest.Seq)
		return bump(ctx, base)
	}
	res, err := index.Commit(context.Background(), b, stale, build, index.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(bases) != 2 || bases[0] != 1 || bases[1] != 2 || res.Head.Manifest.Seq != 3 {
		t.Fatalf("bases %v, landed %d: want a rebuild on seq 2 landing seq 3", bases, res.Head.Manifest.Seq)
	}
	if _, err := index.ReadHistory(context.Background(), b, 2); err != nil {
		t.Fatalf("history copy of the superseded manifest: %v", err)
	}
}

func TestCommit_LostRace_WaitsForMutationLimit(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Nth: 1, Times: 2, Mode: wrap.FailBefore,
		Err: &backend.Error{Op: "put", Key: index.ManifestKey, Err: backend.ErrPrecondition}})
	l := &limited{Backend: f, perSec: 20} // at most one write per 50 ms
	if _, err := index.Commit(context.Background(), l, readHead(t, b), bump, index.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(l.puts) != 3 {
		t.Fatalf("%d manifest writes, want 3", len(l.puts))
	}
	for i := 1; i < len(l.puts); i++ {
		if gap := l.puts[i].Sub(l.puts[i-1]); gap < 50*time.Millisecond {
			t.Fatalf("write %d came %v after the previous one: faster than the store's limit", i+1, gap)
		}
	}
}

// On a store that states a per-object limit (GCS), a writer refused
// retryably and read back as not landed is being paced, not beaten: the
// refusals do not spend its attempts, so eight writers taking turns on
// one manifest do not fail pushes (issue 23's commit-rate run lost 5 of 40
// to the 12-attempt bound before).
func TestCommit_PacedRefusals_DoNotSpendAttempts(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Nth: 1, Times: 5, Mode: wrap.FailBefore})
	l := &limited{Backend: f, perSec: 1000}
	res, err := index.Commit(context.Background(), l, readHead(t, b), bump, index.CommitOptions{Attempts: 2})
	if err != nil {
		t.Fatalf("commit paced 5 times with 2 attempts: %v", err)
	}
	if res.Attempts != 6 || readHead(t, b).Manifest.Seq != 2 {
		t.Fatalf("attempts %d, seq %d: want the sixth write landing seq 2", res.Attempts, readHead(t, b).Manifest.Seq)
	}
}

// Pacing is bounded by time: a store that refuses every write is failing,
// and the commit says so within PacedWait, naming the refusals.
func TestCommit_PacedRefusals_BoundedByPacedWait(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Mode: wrap.FailBefore})
	l := &limited{Backend: f, perSec: 1000}
	_, err := index.Commit(context.Background(), l, readHead(t, b), bump, index.CommitOptions{PacedWait: 30 * time.Millisecond})
	if !errors.Is(err, index.ErrCommitContention) || !strings.Contains(err.Error(), "refused by the store's per-object limit") {
		t.Fatalf("err = %v, want ErrCommitContention naming the refusals", err)
	}
	if readHead(t, b).Manifest.Seq != 1 {
		t.Fatal("a failed commit changed the manifest")
	}
}

func TestCommit_NothingProposed_IsNoop(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "x"})
	res, err := index.Commit(context.Background(), b, readHead(t, b), func(context.Context, index.Head) (index.Proposal, error) {
		return index.Proposal{}, nil
	}, index.CommitOptions{})
	if err != nil || !res.Noop || res.Attempts != 0 {
		t.Fatalf("res %+v err %v, want a noop with no write", res, err)
	}
}
