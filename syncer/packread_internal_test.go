package syncer

import (
	"fmt"
	"testing"

	"github.com/siltsync/silt/index"
)

func packAct(pack string, off, size int64) pullAction {
	return pullAction{kind: pullDownload, path: fmt.Sprintf("p/%s/%d", pack, off), entry: index.Entry{Pack: pack, Off: off, Size: size}}
}

func TestPackRuns_Coalescing_ReadsAsPlanned(t *testing.T) {
	var contiguous, sparse, long, dup []pullAction
	for i := range int64(10) {
		contiguous = append(contiguous, packAct("a", i*1024, 1024))
	}
	// Two small ranges 1 MiB apart: little of the span is wanted.
	sparse = append(sparse, packAct("a", 0, 100), packAct("a", 1<<20, 100))
	// 6 MiB wanted in one stretch: more than one read of at most runMax.
	for i := range int64(6) {
		long = append(long, packAct("a", i<<20, 1<<20))
	}
	// One location at two paths: one spot, both installed from one read.
	dup = append(dup, packAct("a", 0, 10), packAct("a", 0, 10), packAct("b", 0, 10))
	dup[1].path = "other"
	for _, tc := range []struct {
		name  string
		acts  []pullAction
		runs  int
		spots int
	}{
		{"contiguous", contiguous, 1, 10},
		{"sparse", sparse, 2, 2},
		{"long", long, 2, 6},
		{"dup", dup, 2, 2},
	} {
		runs := packRuns(tc.acts)
		spots := 0
		for _, r := range runs {
			spots += len(r.spots)
			if r.rng().Length > runMax && len(r.spots) > 1 {
				t.Errorf("%s: a run of %d bytes, bound %d", tc.name, r.rng().Length, runMax)
			}
		}
		if len(runs) != tc.runs || spots != tc.spots {
			t.Errorf("%s: %d runs with %d spots, want %d and %d", tc.name, len(runs), spots, tc.runs, tc.spots)
		}
	}
}
