package index_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
)

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
	logCommit(t, b, time.Now, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.LogPrefix, Nth: 1, Mode: wrap.FailAfter})
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
	logCommit(t, b, time.Now, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.LogPrefix, Nth: 1, Mode: wrap.FailBefore})
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
	logCommit(t, b, time.Now, map[string]string{"a": "x"})
	f := wrap.Faults(b)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.LogPrefix, Mode: wrap.FailBefore})
	_, err := index.Commit(context.Background(), f, readHead(t, b), bump, index.CommitOptions{Attempts: 3})
	if !errors.Is(err, index.ErrCommitContention) || !strings.Contains(err.Error(), "3 attempts") || !strings.Contains(err.Error(), "3 unknown outcomes") {
		t.Fatalf("err = %v, want ErrCommitContention naming 3 attempts and their outcomes", err)
	}
	if readHead(t, b).Manifest.Seq != 1 {
		t.Fatal("a failed commit changed the head")
	}
}

func TestCommit_LostRace_RebuildsOnFreshBase(t *testing.T) {
	b := mem.New()
	logCommit(t, b, time.Now, map[string]string{"a": "x"})
	stale := readHead(t, b)
	logCommit(t, b, time.Now, map[string]string{"a": "y"}) // another writer won
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
}

// A bucket an older silt wrote is refused before anything is written,
// naming its format; so is the log of whole states (format 4).
func TestCommit_OlderFormat_RefusedWithMigrateRequired(t *testing.T) {
	for _, format := range []int{index.FormatVersion, index.LogFormat} {
		b := mem.New()
		if _, err := legacy.Push(context.Background(), b, format, map[string][]byte{"a": []byte("x")}); err != nil {
			t.Fatal(err)
		}
		c := wrap.Count(b)
		built := false
		_, err := index.Commit(context.Background(), c, readHead(t, b), func(ctx context.Context, base index.Head) (index.Proposal, error) {
			built = true
			return bump(ctx, base)
		}, index.CommitOptions{})
		var me *index.MigrateRequiredError
		if !errors.Is(err, index.ErrMigrateRequired) || !errors.As(err, &me) || me.Format != format {
			t.Fatalf("format %d: commit = %v, want a MigrateRequiredError naming it", format, err)
		}
		if n := c.Counts(); built || n.Put+n.CondPut+n.Delete != 0 {
			t.Fatalf("format %d: a refused commit built a proposal (%v) or wrote (%+v)", format, built, n)
		}
	}
}

func TestCommit_NothingProposed_IsNoop(t *testing.T) {
	b := mem.New()
	logCommit(t, b, time.Now, map[string]string{"a": "x"})
	res, err := index.Commit(context.Background(), b, readHead(t, b), func(context.Context, index.Head) (index.Proposal, error) {
		return index.Proposal{}, nil
	}, index.CommitOptions{})
	if err != nil || !res.Noop || res.Attempts != 0 {
		t.Fatalf("res %+v err %v, want a noop with no write", res, err)
	}
}
