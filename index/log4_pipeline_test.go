package index_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
)

// nextOf proposes base's manifest again at the next seq, noting the base
// each build saw.
func nextOf(bases *[]index.Head) func(context.Context, index.Head) (index.Proposal, error) {
	return func(_ context.Context, base index.Head) (index.Proposal, error) {
		*bases = append(*bases, base)
		m := *base.Manifest
		m.Seq = base.Manifest.Seq + 1
		return index.Proposal{Next: &m}, nil
	}
}

// A commit built on a predecessor in flight (the head its Announce
// gave) lands after it, naming it as its predecessor, once After returns
// the predecessor as it landed; and Announce gave the very bytes the
// predecessor landed as.
func TestLog_Pipelined_CommitsOnTheLandedPredecessor(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	h1 := logCommit(t, b, time.Now, map[string]string{"f": "1"})
	next := *h1.Manifest
	next.Seq++
	specs := make(chan index.Head, 2) // one for the successor, one to compare

	landed := make(chan index.Head, 1)
	var second index.CommitResult
	done := make(chan error, 1)
	go func() {
		spec := <-specs
		var bases []index.Head
		build := nextOf(&bases)
		var err error
		second, err = index.Commit(ctx, b, spec, func(ctx context.Context, base index.Head) (index.Proposal, error) {
			p, err := build(ctx, base)
			p.After = func(context.Context) (index.Head, error) { return <-landed, nil }
			return p, err
		}, index.CommitOptions{Now: time.Now})
		if err == nil && len(bases) != 1 {
			err = errors.New("rebuilt")
		}
		done <- err
	}()
	first, err := index.Commit(ctx, b, h1, func(context.Context, index.Head) (index.Proposal, error) {
		return index.Proposal{Next: &next, Announce: func(h index.Head) { specs <- h; specs <- h }}, nil
	}, index.CommitOptions{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if spec := <-specs; !bytes.Equal(first.Head.Data, spec.Data) {
		t.Fatalf("Announce gave %s, the entry landed as %s", spec.Data, first.Head.Data)
	}
	landed <- first.Head
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := second.Head.Manifest; got.Seq != 3 || got.Prev == "" {
		t.Fatalf("pipelined commit landed as seq %d prev %q, want seq 3 after the first", got.Seq, got.Prev)
	}
	head, err := index.ReadHead(ctx, b, time.Now)
	if err != nil || head.Manifest.Seq != 3 {
		t.Fatalf("head after both: %v, %v", head.Manifest, err)
	}
}

// A commit built on a predecessor that did not land (After fails), or
// landed as other bytes, is never created on it: the base is read again
// and the proposal rebuilt on the real head.
func TestLog_Pipelined_PredecessorLost_Rebuilds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(other index.Head) (index.Head, error)
	}{
		{"failed", func(index.Head) (index.Head, error) { return index.Head{}, errors.New("lost its race") }},
		{"other bytes", func(other index.Head) (index.Head, error) { return other, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := mem.New()
			h1 := logCommit(t, b, time.Now, map[string]string{"f": "1"})
			never := *h1.Manifest
			never.Seq++
			never.Fences = map[string]uint64{"never": 1}
			other := logCommit(t, b, time.Now, map[string]string{"f": "other"}) // seq 2, another writer's
			spec := announced(t, b, h1, &never)
			var bases []index.Head
			build := nextOf(&bases)
			res, err := index.Commit(ctx, b, spec, func(ctx context.Context, base index.Head) (index.Proposal, error) {
				p, err := build(ctx, base)
				if len(bases) == 1 {
					p.After = func(context.Context) (index.Head, error) { return tc.after(other) }
				}
				return p, err
			}, index.CommitOptions{Now: time.Now})
			if err != nil {
				t.Fatal(err)
			}
			if len(bases) != 2 || !bytes.Equal(bases[1].Data, other.Data) {
				t.Fatalf("built %d times; want a rebuild on the real head", len(bases))
			}
			if res.Head.Manifest.Seq != 3 || res.Head.Manifest.Fences["never"] != 0 {
				t.Fatalf("landed %+v, want seq 3 on the other writer's entry", res.Head.Manifest)
			}
		})
	}
}

// announced returns the head Proposal.Announce gives for next on base, in
// a bucket where another writer has already taken next's seq: the entry
// is never created.
func announced(t *testing.T, b backend.Backend, base index.Head, next *index.Manifest) index.Head {
	t.Helper()
	var spec index.Head
	tries := 0
	_, err := index.Commit(context.Background(), b, base, func(context.Context, index.Head) (index.Proposal, error) {
		if tries++; tries > 1 {
			return index.Proposal{}, nil
		}
		return index.Proposal{Next: next, Announce: func(h index.Head) { spec = h }}, nil
	}, index.CommitOptions{Now: time.Now})
	if err != nil || spec.Manifest == nil || spec.Manifest.Seq != next.Seq {
		t.Fatalf("announce of seq %d: %+v, %v", next.Seq, spec.Manifest, err)
	}
	return spec
}
