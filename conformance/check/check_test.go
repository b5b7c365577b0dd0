package check

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
)

// recorder is a testing.TB that records failures and skips instead of
// reporting them, so a test can run a check against a broken backend and
// assert that the check notices.
type recorder struct {
	testing.TB // the real test: Context, Name, Cleanup
	mu         sync.Mutex
	failed     bool
	skipped    bool
	msgs       []string
}

func (r *recorder) record(fail, skip bool, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = r.failed || fail
	r.skipped = r.skipped || skip
	r.msgs = append(r.msgs, msg)
}

func (r *recorder) Helper()                    {}
func (r *recorder) Log(args ...any)            { r.record(false, false, fmt.Sprint(args...)) }
func (r *recorder) Logf(f string, args ...any) { r.record(false, false, fmt.Sprintf(f, args...)) }
func (r *recorder) Error(args ...any)          { r.record(true, false, fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, args ...any) {
	r.record(true, false, fmt.Sprintf(f, args...))
}
func (r *recorder) Fail()                        { r.record(true, false, "Fail") }
func (r *recorder) FailNow()                     { r.record(true, false, "FailNow"); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)            { r.Error(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, args ...any) { r.Errorf(f, args...); runtime.Goexit() }
func (r *recorder) Skip(args ...any)             { r.record(false, true, fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Skipf(f string, args ...any) {
	r.record(false, true, fmt.Sprintf(f, args...))
	runtime.Goexit()
}
func (r *recorder) SkipNow() { r.record(false, true, "SkipNow"); runtime.Goexit() }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// runCheck runs the named check on b in its own goroutine (Fatal and Skip
// end it with runtime.Goexit) and returns what it reported.
func runCheck(t *testing.T, name string, b backend.Backend) *recorder {
	t.Helper()
	i := slices.IndexFunc(All(), func(c Check) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no check named %q", name)
	}
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		All()[i].Run(r, b)
	}()
	<-done
	return r
}

func TestChecks_Names_AreUniqueSentences(t *testing.T) {
	sentence := regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(_[A-Z][A-Za-z0-9]*){2}$`)
	seen := map[string]bool{}
	for _, c := range All() {
		if !sentence.MatchString(c.Name) {
			t.Errorf("check name %q is not Subject_Condition_Outcome", c.Name)
		}
		if seen[c.Name] {
			t.Errorf("check name %q is used twice", c.Name)
		}
		seen[c.Name] = true
	}
}

func TestChecks_Mem_PassesEveryCheck(t *testing.T) {
	for _, c := range All() {
		r := runCheck(t, c.Name, backend.Portable(mem.New()))
		if r.Failed() {
			t.Errorf("%s failed on mem: %s", c.Name, strings.Join(r.msgs, "; "))
		}
	}
}

// Broken backends, each wrong in one way a real store has been wrong.

// ignoresConds treats every write as unconditional (a store that drops
// If-None-Match and If-Match headers).
type ignoresConds struct{ backend.Backend }

func (b ignoresConds) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, _ backend.Cond) (backend.ObjectInfo, error) {
	return b.Backend.Put(ctx, key, body, size, backend.Cond{})
}

func (b ignoresConds) Delete(ctx context.Context, key string, _ backend.Cond) error {
	return b.Backend.Delete(ctx, key, backend.Cond{})
}

// ignoresIfNoneMatch reads every object in full, as a store that drops
// If-None-Match on GET would.
type ignoresIfNoneMatch struct{ backend.Backend }

func (b ignoresIfNoneMatch) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	opts.IfNoneMatch = ""
	return b.Backend.Get(ctx, key, opts)
}

// notModifiedAlways answers every IfNoneMatch with ErrNotModified, changed
// or not, and even for a missing key.
type notModifiedAlways struct{ backend.Backend }

func (b notModifiedAlways) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if opts.IfNoneMatch != "" {
		return nil, backend.ObjectInfo{}, &backend.Error{Op: "get", Key: key, Err: backend.ErrNotModified}
	}
	return b.Backend.Get(ctx, key, opts)
}

// ignoresRange reads every object in full, as a store that drops the
// Range header would.
type ignoresRange struct{ backend.Backend }

func (b ignoresRange) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	opts.Range = nil
	return b.Backend.Get(ctx, key, opts)
}

// sizeIsRangeLength reports the range's length as the object's size, the
// mistake of taking S3's ContentLength for a ranged GET.
type sizeIsRangeLength struct{ backend.Backend }

func (b sizeIsRangeLength) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	rc, info, err := b.Backend.Get(ctx, key, opts)
	if err == nil && opts.Range != nil {
		info.Size = opts.Range.Length
	}
	return rc, info, err
}

// cutsRangeAtEnd serves a range that ends past the object with the bytes
// up to its end, as S3 and GCS answer such a request (206).
type cutsRangeAtEnd struct{ backend.Backend }

func (b cutsRangeAtEnd) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if r := opts.Range; r != nil {
		if st, err := b.Backend.Stat(ctx, key); err == nil && r.Offset < st.Size && r.End() > st.Size {
			opts.Range = &backend.Range{Offset: r.Offset, Length: st.Size - r.Offset}
		}
	}
	return b.Backend.Get(ctx, key, opts)
}

// rangeBeforeIfMatch judges the range before IfMatch, as an emulator that
// ignores If-Match on GET answers 416 for a stale version.
type rangeBeforeIfMatch struct{ backend.Backend }

func (b rangeBeforeIfMatch) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if r := opts.Range; r != nil {
		if st, err := b.Backend.Stat(ctx, key); err == nil && !r.Within(st.Size) {
			return nil, backend.ObjectInfo{}, &backend.Error{Op: "get", Key: key, Err: backend.ErrInvalidRange}
		}
	}
	return b.Backend.Get(ctx, key, opts)
}

// dropsCondWrites reports success for a conditional Put without storing it.
type dropsCondWrites struct{ backend.Backend }

func (b dropsCondWrites) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if cond.IsZero() {
		return b.Backend.Put(ctx, key, body, size, cond)
	}
	return backend.ObjectInfo{Key: key, Size: size, Version: "dropped"}, nil
}

// ignoresCtx never looks at its context.
type ignoresCtx struct{ backend.Backend }

func (b ignoresCtx) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	return b.Backend.Put(context.WithoutCancel(ctx), key, body, size, cond)
}

func (b ignoresCtx) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	return b.Backend.List(context.WithoutCancel(ctx), prefix, opts, fn)
}

// storesPartialOnCancel keeps what it had read when its context is
// cancelled (a store that streams into the final object).
type storesPartialOnCancel struct{ backend.Backend }

func (b storesPartialOnCancel) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	var buf bytes.Buffer
	p := make([]byte, 4096)
	for {
		n, err := body.Read(p)
		buf.Write(p[:n])
		if ctx.Err() != nil {
			_, _ = backend.PutBytes(context.WithoutCancel(ctx), b.Backend, key, buf.Bytes(), cond)
			return backend.ObjectInfo{}, ctx.Err()
		}
		if err == io.EOF {
			return backend.PutBytes(ctx, b.Backend, key, buf.Bytes(), cond)
		}
		if err != nil {
			return backend.ObjectInfo{}, err
		}
	}
}

// ignoresPageSize always lists with the default page size.
type ignoresPageSize struct{ backend.Backend }

func (b ignoresPageSize) List(ctx context.Context, prefix string, _ backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	return b.Backend.List(ctx, prefix, backend.ListOptions{}, fn)
}

// sortsUTF16 lists in UTF-16 code unit order, as a JavaScript or Java
// gateway would.
type sortsUTF16 struct{ backend.Backend }

func (b sortsUTF16) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	var all []backend.ObjectInfo
	err := b.Backend.List(ctx, prefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		all = append(all, page...)
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(x, y backend.ObjectInfo) int {
		return slices.Compare(utf16.Encode([]rune(x.Key)), utf16.Encode([]rune(y.Key)))
	})
	return fn(all)
}

// dropsIfAbsent takes Cond{IfAbsent, IfMatch} as Cond{IfMatch}.
type dropsIfAbsent struct{ backend.Backend }

func (b dropsIfAbsent) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if cond.IfMatch != "" {
		cond.IfAbsent = false
	}
	return b.Backend.Put(ctx, key, body, size, cond)
}

// readsBodyFirst buffers the body before the inner backend sees the key.
type readsBodyFirst struct{ backend.Backend }

func (b readsBodyFirst) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	return b.Backend.Put(ctx, key, bytes.NewReader(data), size, cond)
}

func TestChecks_BrokenBackend_Fails(t *testing.T) {
	for _, tc := range []struct {
		check string
		b     backend.Backend
	}{
		{"Put_IfAbsent_SecondCreateFailsAndKeepsFirst", ignoresConds{mem.New()}},
		{"Put_IfAbsent_SixteenRacersOneWinner", ignoresConds{mem.New()}},
		{"Put_IfMatchWrongVersion_FailsAndKeepsObject", ignoresConds{mem.New()}},
		{"Put_IfMatchStaleVersion_FailsAndKeepsObject", ignoresConds{mem.New()}},
		{"Put_IfMatchMissingKey_IsErrPrecondition", ignoresConds{mem.New()}},
		{"Put_IfMatch_SixteenRacersOneWinner", ignoresConds{mem.New()}},
		{"Delete_IfMatchWrongVersion_FailsAndKeepsObject", ignoresConds{mem.New()}},
		{"Delete_IfMatchMissingKey_IsErrPrecondition", ignoresConds{mem.New()}},
		{"Put_IfMatch_SixteenWorkersTwentyIncrementsLoseNoUpdate", dropsCondWrites{mem.New()}},
		{"Get_IfNoneMatchCurrentVersion_IsErrNotModified", ignoresIfNoneMatch{mem.New()}},
		{"Get_IfNoneMatchStaleVersion_ReturnsTheObject", notModifiedAlways{mem.New()}},
		{"Get_IfNoneMatchMissingKey_IsErrNotExist", notModifiedAlways{mem.New()}},
		{"Put_CancelledContext_FailsAndStoresNothing", ignoresCtx{mem.New()}},
		{"Put_CancelledContext_FailsAndKeepsOldObject", ignoresCtx{mem.New()}},
		{"List_ContextCancelledInCallback_StopsWithError", ignoresCtx{mem.New()}},
		{"Put_ContextCancelledMidBody_StoresNoPartialObject", storesPartialOnCancel{mem.New()}},
		{"Put_ContextCancelledMidBody_LeavesOldOrNewObject", storesPartialOnCancel{mem.New()}},
		{"List_PageSizeDividesCount_EveryObjectOnce", ignoresPageSize{mem.New()}},
		{"List_PageSizeDoesNotDivideCount_EveryObjectOnce", ignoresPageSize{mem.New()}},
		{"List_SpecialCharacterKeys_StrictByteOrder", sortsUTF16{mem.New()}},
		{"Keys_Invalid_RejectedByEveryVerbBeforeIO", readsBodyFirst{mem.New()}},
		// A store that ignores Range is caught behind backend.Portable
		// (which cuts the body at the range's length) wherever the
		// offset is not 0, and bare at every offset.
		{"Get_RangeMiddle_ReturnsThoseBytes", backend.Portable(ignoresRange{mem.New()})},
		{"Get_RangeLastByte_ReturnsThatByte", backend.Portable(ignoresRange{mem.New()})},
		{"Get_RangeAcrossLargeObject_ReturnsThoseBytes", backend.Portable(ignoresRange{mem.New()})},
		{"Get_RangeFirstByte_ReturnsThatByte", ignoresRange{mem.New()}},
		{"Get_RangeMiddle_ReturnsThoseBytes", sizeIsRangeLength{mem.New()}},
		{"Get_RangeIfMatchCurrentVersion_ReturnsTheRange", sizeIsRangeLength{mem.New()}},
		{"Get_RangeOnePastTheEnd_IsErrInvalidRange", cutsRangeAtEnd{mem.New()}},
		{"Get_RangeIfMatchStaleVersion_IsErrPrecondition", rangeBeforeIfMatch{mem.New()}},
		// A store that takes IfAbsent with IfMatch as IfMatch, as a
		// bare driver would (no constructor hands one out any more).
		{"Put_IfAbsentWithIfMatch_IsErrInvalidCondAndStoresNothing", dropsIfAbsent{mem.New()}},
	} {
		if r := runCheck(t, tc.check, tc.b); !r.Failed() {
			t.Errorf("%s passed on %T; it must fail", tc.check, tc.b)
		}
	}
}

// claimsNothing wraps a backend and claims no capability, whatever the
// inner one can do.
type claimsNothing struct{ backend.Backend }

func (claimsNothing) Capabilities() backend.Capabilities { return backend.Capabilities{} }

func TestChecks_UnclaimedCapability_SkipsNamingIt(t *testing.T) {
	for _, tc := range []struct{ check, capability string }{
		{"Put_IfAbsent_SixteenRacersOneWinner", "AtomicCreate"},
		{"Put_IfMatchStaleVersion_FailsAndKeepsObject", "ConditionalPut"},
		{"Put_IfMatch_SixteenWorkersTwentyIncrementsLoseNoUpdate", "ConditionalPut"},
		{"Delete_IfMatchCurrentVersion_Deletes", "ConditionalDelete"},
		{"List_PageSizeDividesCount_EveryObjectOnce", "ListAfterWrite"},
	} {
		r := runCheck(t, tc.check, claimsNothing{mem.New()})
		if !r.Skipped() || r.Failed() {
			t.Errorf("%s on a backend claiming nothing: skipped=%v failed=%v, want a skip", tc.check, r.Skipped(), r.Failed())
			continue
		}
		if msg := strings.Join(r.msgs, "; "); !strings.Contains(msg, "Capabilities()."+tc.capability) {
			t.Errorf("%s skipped with %q, which does not name Capabilities().%s", tc.check, msg, tc.capability)
		}
	}
	// A backend that claims nothing yet silently honours (or ignores)
	// conditions is caught: it must refuse them.
	for _, name := range []string{
		"Put_IfAbsent_NotSupportedWhenNotClaimed",
		"Put_IfMatch_NotSupportedWhenNotClaimed",
		"Delete_IfMatch_NotSupportedWhenNotClaimed",
	} {
		if r := runCheck(t, name, claimsNothing{mem.New()}); !r.Failed() {
			t.Errorf("%s passed on a backend that accepts conditions it does not claim", name)
		}
	}
}

// refusesConds is an honest backend without conditions: it claims none and
// refuses each with ErrNotSupported.
type refusesConds struct{ backend.Backend }

func (refusesConds) Capabilities() backend.Capabilities { return backend.Capabilities{} }

func (b refusesConds) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	if !cond.IsZero() {
		return backend.ObjectInfo{}, backend.Permanent("put", key, backend.ErrNotSupported)
	}
	return b.Backend.Put(ctx, key, body, size, cond)
}

func (b refusesConds) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	if !cond.IsZero() {
		return backend.Permanent("delete", key, backend.ErrNotSupported)
	}
	return b.Backend.Delete(ctx, key, cond)
}

// TestAll_BackendWithoutConditions_PassesWithSkips runs every check as
// conformance.RunBackend does: a *testing.T is a T.
func TestAll_BackendWithoutConditions_PassesWithSkips(t *testing.T) {
	for _, c := range All() {
		t.Run(c.Name, func(t *testing.T) { c.Run(t, backend.Portable(refusesConds{mem.New()})) })
	}
}
