package index_test

import (
	"bytes"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// Regression (found by the liveness model at budget 300 after the issue-18
// and issue-19 merges): a pack re-stored under a fresh random trailer whose
// acknowledgement was lost is settled by the retry layer's Stat as "already
// stored" (a precondition failure), and PutPack took that for a failure,
// so the push failed on one transient fault. Under a random name, a pack
// already there is the write's own.
func TestPutPack_Regression_SaltedPackLostAckFailedThePush(t *testing.T) {
	ctx := t.Context()
	inner := mem.New()
	data := bytes.Repeat([]byte("p"), 4096)
	if _, _, err := index.PutPack(ctx, inner, data); err != nil { // the plain name is taken
		t.Fatal(err)
	}
	faulty := wrap.Faults(inner)
	// The first conditional put is the plain name (412), the second the
	// salted one: it lands, and its acknowledgement is lost.
	faulty.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.PacksPrefix, Nth: 2, Mode: wrap.FailAfter})
	store := backend.Production(faulty)
	sha, sent, err := index.PutPack(ctx, store, data)
	if err != nil || !sent {
		t.Fatalf("PutPack after a lost acknowledgement: sent %v, err %v", sent, err)
	}
	if faulty.Fired() != 1 {
		t.Fatalf("%d faults fired, want 1", faulty.Fired())
	}
	if sha == index.PackSHA(data) {
		t.Fatal("the pack was adopted under its plain name")
	}
	if ok, err := backend.Exists(ctx, inner, index.PackKey(sha)); err != nil || !ok {
		t.Fatalf("salted pack %s: exists %v, %v", sha, ok, err)
	}
}
