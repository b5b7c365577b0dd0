package check

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/siltsync/silt/backend"
)

// rangeChecks cover GetOptions.Range, the ranged read that lets a caller
// fetch one small file out of a pack object. Every backend must honour
// it: there is no capability to claim, and a store that cannot range must
// fail with ErrNotSupported rather than hand out the whole object.
var rangeChecks = []Check{
	{"Get_RangeFirstByte_ReturnsThatByte", checkRangeFirstByte},
	{"Get_RangeLastByte_ReturnsThatByte", checkRangeLastByte},
	{"Get_RangeMiddle_ReturnsThoseBytes", checkRangeMiddle},
	{"Get_RangeWholeObject_ReturnsTheObject", checkRangeWhole},
	{"Get_RangeEndingAtTheEnd_ReturnsTheTail", checkRangeTail},
	{"Get_RangeOnePastTheEnd_IsErrInvalidRange", checkRangeOnePast},
	{"Get_RangeAtOffsetSize_IsErrInvalidRange", checkRangeAtSize},
	{"Get_RangeFarPastTheEnd_IsErrInvalidRange", checkRangeFarPast},
	{"Get_RangeMalformed_IsErrInvalidRange", checkRangeMalformed},
	{"Get_RangeOfEmptyObject_IsErrInvalidRange", checkRangeEmpty},
	{"Get_RangeMissingKey_IsErrNotExist", checkRangeMissing},
	{"Get_RangeIfMatchCurrentVersion_ReturnsTheRange", checkRangeIfMatchCurrent},
	{"Get_RangeIfMatchStaleVersion_IsErrPrecondition", checkRangeIfMatchStale},
	{"Get_RangeIfNoneMatchCurrentVersion_IsErrNotModified", checkRangeIfNoneMatchCurrent},
	{"Get_RangeAcrossLargeObject_ReturnsThoseBytes", checkRangeLarge},
}

// rangeObject is the size of most ranged checks' object: larger than one
// byte at each end and a middle, odd so no range is half of it.
const rangeObject = 1001

// wantRange reads r of key under opts and checks the body is exactly
// data[r.Offset:r.End()] while ObjectInfo describes the whole object, at
// version v.
func wantRange(t T, b backend.Backend, key string, data []byte, v backend.Version, r backend.Range, opts backend.GetOptions) {
	t.Helper()
	opts.Range = &r
	what := fmt.Sprintf("Get(%q, Range{Offset: %d, Length: %d}) of a %d-byte object", key, r.Offset, r.Length, len(data))
	got, info, err := get(t.Context(), b, key, opts)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if want := data[r.Offset:r.End()]; !bytes.Equal(got, want) {
		if bytes.Equal(got, data) && len(got) != len(want) {
			t.Errorf("%s returned the whole object: the store ignored Range (a driver that cannot range must return ErrNotSupported)", what)
		} else {
			t.Errorf("%s = %s, want %s", what, describe(got), describe(want))
		}
	}
	// Size is the whole object's, not the range's (S3 ContentLength is
	// the range's; the size is in Content-Range).
	checkInfo(t, what, key, info, int64(len(data)))
	if info.Version != v {
		t.Errorf("%s: Version = %q, want the object's version %q", what, info.Version, v)
	}
}

// wantRangeFails checks that reading r of key under opts fails with
// target alone: no reader, no other sentinel, not retryable.
func wantRangeFails(t T, b backend.Backend, key string, r backend.Range, opts backend.GetOptions, target error) {
	t.Helper()
	opts.Range = &r
	what := fmt.Sprintf("Get(%q, Range{Offset: %d, Length: %d})", key, r.Offset, r.Length)
	rc, _, err := b.Get(t.Context(), key, opts)
	if rc != nil {
		rc.Close()
		t.Errorf("%s returned a reader (err %v), want no reader and %v", what, err, target)
	}
	if err == nil {
		t.Fatalf("%s succeeded, want %v", what, target)
	}
	wantIs(t, what, err, target)
	for _, other := range []error{backend.ErrInvalidRange, backend.ErrNotExist, backend.ErrPrecondition, backend.ErrNotModified} {
		if other != target && errors.Is(err, other) {
			t.Errorf("%s: err = %v is also %v; it must be only %v", what, err, other, target)
		}
	}
	if backend.IsRetryable(err) {
		t.Errorf("%s: err = %v is retryable; asking again cannot change the answer", what, err)
	}
}

func checkRangeFirstByte(t T, b backend.Backend) {
	data := body("range-first", rangeObject)
	info := put(t, b, "k", data)
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: 0, Length: 1}, backend.GetOptions{})
}

func checkRangeLastByte(t T, b backend.Backend) {
	data := body("range-last", rangeObject)
	info := put(t, b, "k", data)
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: rangeObject - 1, Length: 1}, backend.GetOptions{})
}

func checkRangeMiddle(t T, b backend.Backend) {
	data := body("range-middle", rangeObject)
	info := put(t, b, "k", data)
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: 300, Length: 123}, backend.GetOptions{})
	// A second range of the same object, so a store that serves every
	// range from the first one's offset is caught.
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: 17, Length: 2}, backend.GetOptions{})
}

func checkRangeWhole(t T, b backend.Backend) {
	data := body("range-whole", rangeObject)
	info := put(t, b, "k", data)
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: 0, Length: rangeObject}, backend.GetOptions{})
}

func checkRangeTail(t T, b backend.Backend) {
	data := body("range-tail", rangeObject)
	info := put(t, b, "k", data)
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: 400, Length: rangeObject - 400}, backend.GetOptions{})
}

// checkRangeOnePast asks for a range ending one byte past the object. S3
// and GCS answer it with the bytes up to the end (206); the contract
// refuses it on every store, so a caller never mistakes a short read for
// the range it asked for.
func checkRangeOnePast(t T, b backend.Backend) {
	data := body("range-one-past", rangeObject)
	info := put(t, b, "k", data)
	wantRangeFails(t, b, "k", backend.Range{Offset: 400, Length: rangeObject - 400 + 1}, backend.GetOptions{}, backend.ErrInvalidRange)
	wantRangeFails(t, b, "k", backend.Range{Offset: 0, Length: rangeObject + 1}, backend.GetOptions{}, backend.ErrInvalidRange)
	// The refused read changed nothing.
	wantObject(t, b, "k", data, info.Version)
}

// checkRangeAtSize asks for a range starting at the object's size, which
// S3 and GCS answer with 416.
func checkRangeAtSize(t T, b backend.Backend) {
	put(t, b, "k", body("range-at-size", rangeObject))
	wantRangeFails(t, b, "k", backend.Range{Offset: rangeObject, Length: 1}, backend.GetOptions{}, backend.ErrInvalidRange)
}

func checkRangeFarPast(t T, b backend.Backend) {
	put(t, b, "k", body("range-far-past", rangeObject))
	wantRangeFails(t, b, "k", backend.Range{Offset: 1 << 40, Length: 10}, backend.GetOptions{}, backend.ErrInvalidRange)
}

// checkRangeMalformed passes ranges no object holds: refused before any
// I/O (backend.Portable), as a caller's bug, on every store alike.
func checkRangeMalformed(t T, b backend.Backend) {
	put(t, b, "k", body("range-malformed", rangeObject))
	for _, r := range []backend.Range{{Offset: -1, Length: 2}, {Offset: 0, Length: 0}, {Offset: 5, Length: -1}, {Offset: 1 << 62, Length: 1 << 62}} {
		wantRangeFails(t, b, "k", r, backend.GetOptions{}, backend.ErrInvalidRange)
	}
}

// checkRangeEmpty reads a range of a 0-byte object: no range lies inside
// it (AWS answers 416 InvalidRange).
func checkRangeEmpty(t T, b backend.Backend) {
	info := put(t, b, "empty", []byte{})
	wantRangeFails(t, b, "empty", backend.Range{Offset: 0, Length: 1}, backend.GetOptions{}, backend.ErrInvalidRange)
	wantObject(t, b, "empty", []byte{}, info.Version)
}

func checkRangeMissing(t T, b backend.Backend) {
	put(t, b, "present", body("range-present", 10))
	wantRangeFails(t, b, "absent", backend.Range{Offset: 0, Length: 1}, backend.GetOptions{}, backend.ErrNotExist)
}

// checkRangeIfMatchCurrent reads part of exactly this version, as a pull
// reads one file out of a pack it already knows.
func checkRangeIfMatchCurrent(t T, b backend.Backend) {
	data := body("range-ifmatch-current", rangeObject)
	info := put(t, b, "k", data)
	opts := backend.GetOptions{IfMatch: info.Version}
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: 250, Length: 500}, opts)
	wantRange(t, b, "k", data, info.Version, backend.Range{Offset: rangeObject - 1, Length: 1}, opts)
}

// checkRangeIfMatchStale reads a range under the version an overwrite
// replaced: a precondition failure, never bytes of the new object.
func checkRangeIfMatchStale(t T, b backend.Backend) {
	old := put(t, b, "k", body("range-ifmatch-old", rangeObject))
	newer := body("range-ifmatch-new", rangeObject)
	cur := put(t, b, "k", newer)
	wantRangeFails(t, b, "k", backend.Range{Offset: 10, Length: 20}, backend.GetOptions{IfMatch: old.Version}, backend.ErrPrecondition)
	// A stale version with a range that no longer lies inside the object
	// is still a precondition failure: the condition is judged first.
	small := body("range-ifmatch-small", 5)
	put(t, b, "k", small)
	wantRangeFails(t, b, "k", backend.Range{Offset: 10, Length: 20}, backend.GetOptions{IfMatch: cur.Version}, backend.ErrPrecondition)
	if err := b.Delete(t.Context(), "k", backend.Cond{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantRangeFails(t, b, "k", backend.Range{Offset: 0, Length: 1}, backend.GetOptions{IfMatch: cur.Version}, backend.ErrPrecondition)
}

func checkRangeIfNoneMatchCurrent(t T, b backend.Backend) {
	info := put(t, b, "k", body("range-ifnonematch", rangeObject))
	wantRangeFails(t, b, "k", backend.Range{Offset: 10, Length: 20}, backend.GetOptions{IfNoneMatch: info.Version}, backend.ErrNotModified)
}

// checkRangeLarge reads ranges of an object larger than any single read
// or network buffer: across the 1 MiB mark (a part or chunk boundary of
// many stores), and its last bytes.
func checkRangeLarge(t T, b backend.Backend) {
	data := body("range-large", 1<<20+17)
	info := put(t, b, "large", data)
	for _, r := range []backend.Range{
		{Offset: 1<<20 - 100, Length: 110},
		{Offset: 1<<20 + 1, Length: 16},
		{Offset: 3, Length: 1<<20 + 10},
		{Offset: 512 << 10, Length: 1},
	} {
		wantRange(t, b, "large", data, info.Version, r, backend.GetOptions{})
	}
}
