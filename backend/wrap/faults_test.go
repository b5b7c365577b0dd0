package wrap_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

func condPut(b backend.Backend, key, data string) error {
	_, err := backend.PutBytes(context.Background(), b, key, []byte(data), backend.Cond{IfAbsent: true})
	return err
}

func TestFaulty_Nth_FailsOnlyThatMatchingRequest(t *testing.T) {
	m := mem.New()
	f := wrap.Faults(m)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: ".silt/", Nth: 3})
	for i := 1; i <= 5; i++ {
		// Requests the rule does not select must not advance its count.
		silttest.Put(t, f, fmt.Sprintf(".silt/plain%d", i), "p")
		if err := condPut(f, fmt.Sprintf("data/%d", i), "d"); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf(".silt/%d", i)
		err := condPut(f, key, "x")
		exists, _ := backend.Exists(context.Background(), m, key)
		if i == 3 {
			silttest.WantRetryable(t, err, wrap.ErrInjected)
			if exists {
				t.Errorf("%s written despite FailBefore", key)
			}
			continue
		}
		if err != nil || !exists {
			t.Errorf("%s: err = %v, exists = %v; want written", key, err, exists)
		}
	}
	if f.Fired() != 1 {
		t.Errorf("Fired = %d, want 1", f.Fired())
	}
}

func TestFaulty_Times_FailsARun(t *testing.T) {
	tests := []struct {
		nth, times int
		want       string // one letter per Stat: x fails, . passes
	}{
		{0, 0, "xxxxx"},
		{0, 2, "xx..."},
		{2, 0, ".x..."},
		{2, 3, ".xxx."},
	}
	for _, tt := range tests {
		f := wrap.Faults(silttest.Fill(t, 1))
		f.Add(wrap.Rule{Verb: wrap.VerbStat, Nth: tt.nth, Times: tt.times})
		var got strings.Builder
		for range 5 {
			if _, err := f.Stat(context.Background(), "d/k00"); err != nil {
				got.WriteByte('x')
			} else {
				got.WriteByte('.')
			}
		}
		if got.String() != tt.want {
			t.Errorf("Nth %d Times %d: got %s, want %s", tt.nth, tt.times, got.String(), tt.want)
		}
	}
}

func TestFaulty_FailAfter_ObjectWrittenAckLost(t *testing.T) {
	m := mem.New()
	f := wrap.Faults(m)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, Mode: wrap.FailAfter})
	err := condPut(f, ".silt/manifest", "v1")
	silttest.WantRetryable(t, err, wrap.ErrInjected)
	if got := silttest.Read(t, m, ".silt/manifest"); got != "v1" {
		t.Errorf("stored %q, want the write applied", got)
	}
}

func TestFaulty_FailAfter_FailedWriteStillReportsInjected(t *testing.T) {
	m := mem.New()
	silttest.Put(t, m, "k", "old")
	f := wrap.Faults(m)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, Mode: wrap.FailAfter})
	// The write fails its precondition, but the caller never learns that.
	silttest.WantRetryable(t, condPut(f, "k", "new"), wrap.ErrInjected)
	if got := silttest.Read(t, m, "k"); got != "old" {
		t.Errorf("k = %q, want old", got)
	}
}

func TestFaulty_CustomErr_ReturnedAsIs(t *testing.T) {
	boom := backend.Permanent("delete", "k", errors.New("boom"))
	m := silttest.Fill(t, 1)
	f := wrap.Faults(m)
	f.Add(wrap.Rule{Verb: wrap.VerbDelete, Err: boom, Mode: wrap.FailAfter})
	if err := f.Delete(context.Background(), "d/k00", backend.Cond{}); err != boom {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if ok, _ := backend.Exists(context.Background(), m, "d/k00"); ok {
		t.Error("FailAfter delete did not delete")
	}
}

func TestFaulty_Match_NarrowsSelection(t *testing.T) {
	f := wrap.Faults(silttest.Fill(t, 3))
	f.Add(wrap.Rule{Match: func(v wrap.Verb, key string) bool { return strings.HasSuffix(key, "1") }})
	for _, key := range []string{"d/k00", "d/k01", "d/k02"} {
		_, err := f.Stat(context.Background(), key)
		if failed := err != nil; failed != (key == "d/k01") {
			t.Errorf("Stat %s: err = %v", key, err)
		}
	}
}

func TestFaulty_BodyModes_DamageGet(t *testing.T) {
	const content = "0123456789"
	corrupt := []byte(content)
	corrupt[5] ^= 0xff
	tests := []struct {
		mode    wrap.Mode
		want    []byte
		wantErr bool
	}{
		{wrap.CorruptBody, corrupt, false},
		{wrap.TruncateBody, []byte("01234"), false},
		{wrap.BreakBody, []byte("01234"), true},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			m := mem.New()
			want := silttest.Put(t, m, "k", content)
			f := wrap.Faults(m)
			f.Add(wrap.Rule{Verb: wrap.VerbGet, Mode: tt.mode})
			rc, info, err := f.Get(context.Background(), "k", backend.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if info.Version != want.Version || info.Size != int64(len(content)) {
				t.Errorf("info = %+v, want the stored object's", info)
			}
			// One byte at a time, to cross the damaged offset mid-read.
			got, err := io.ReadAll(io.LimitReader(oneByte{rc}, 100))
			if tt.wantErr {
				silttest.WantRetryable(t, err, wrap.ErrInjected)
			} else if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("body = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFaulty_BodyModes_DamageRangedGetInItsMiddle: a ranged body is the
// range, not the object ObjectInfo describes, so the damage lands in the
// range's own middle (not past its end, where nothing would notice).
func TestFaulty_BodyModes_DamageRangedGetInItsMiddle(t *testing.T) {
	const content = "0123456789abcdefghij"
	r := backend.Range{Offset: 10, Length: 6} // "abcdef"
	for _, tt := range []struct {
		mode    wrap.Mode
		want    string
		wantErr bool
	}{
		{wrap.CorruptBody, "abc\x9bef", false},
		{wrap.TruncateBody, "abc", false},
		{wrap.BreakBody, "abc", true},
	} {
		t.Run(tt.mode.String(), func(t *testing.T) {
			m := mem.New()
			silttest.Put(t, m, "k", content)
			f := wrap.Faults(m)
			f.Add(wrap.Rule{Verb: wrap.VerbGet, Mode: tt.mode})
			rc, info, err := f.Get(context.Background(), "k", backend.GetOptions{Range: &r})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if info.Size != int64(len(content)) {
				t.Errorf("info.Size = %d, want the whole object's %d", info.Size, len(content))
			}
			got, err := io.ReadAll(oneByte{rc})
			if tt.wantErr {
				silttest.WantRetryable(t, err, wrap.ErrInjected)
			} else if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("body = %q, want %q", got, tt.want)
			}
		})
	}
}

// oneByte reads at most one byte per call.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

func TestFaulty_List_FailsChosenPage(t *testing.T) {
	for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter} {
		f := wrap.Faults(silttest.Fill(t, 7))
		f.Add(wrap.Rule{Verb: wrap.VerbList, Nth: 2, Mode: mode})
		pages, keys, err := silttest.ListPages(f, "d/", 3)
		silttest.WantRetryable(t, err, wrap.ErrInjected)
		if pages != 1 || keys != 3 {
			t.Errorf("%v: fn saw %d pages, %d keys; want only the first page", mode, pages, keys)
		}
	}
}

func TestFaulty_List_EmptyListingIsOneRequest(t *testing.T) {
	tests := []struct {
		mode wrap.Mode
		sent int64 // List requests reaching the store
	}{{wrap.FailBefore, 0}, {wrap.FailAfter, 1}}
	for _, tt := range tests {
		c := wrap.Count(mem.New())
		f := wrap.Faults(c)
		f.Add(wrap.Rule{Verb: wrap.VerbList, Mode: tt.mode})
		_, _, err := silttest.ListPages(f, "", 0)
		silttest.WantRetryable(t, err, wrap.ErrInjected)
		if got := c.Counts().List; got != tt.sent {
			t.Errorf("%v: inner List requests = %d, want %d", tt.mode, got, tt.sent)
		}
	}
}

// TestFaulty_EveryRequestIndex_FailsOperation shows the crash-test loop:
// learn how many requests an operation makes, then fail each in turn.
func TestFaulty_EveryRequestIndex_FailsOperation(t *testing.T) {
	op := func(b backend.Backend) error {
		if _, err := backend.PutBytes(context.Background(), b, "data/a", []byte("a"), backend.Cond{}); err != nil {
			return err
		}
		if err := condPut(b, ".silt/manifest", "m"); err != nil {
			return err
		}
		_, _, err := silttest.ListPages(b, "", 1)
		return err
	}
	f := wrap.Faults(mem.New())
	if err := op(f); err != nil {
		t.Fatal(err)
	}
	n := len(f.Requests())
	if n != 4 { // put, condput, two list pages
		t.Fatalf("operation made %d requests (%v), want 4", n, f.Requests())
	}
	for i := 1; i <= n; i++ {
		f := wrap.Faults(mem.New())
		f.Add(wrap.Rule{Nth: i})
		silttest.WantRetryable(t, op(f), wrap.ErrInjected)
		if f.Fired() != 1 || len(f.Requests()) != i {
			t.Errorf("index %d: fired %d after %d requests", i, f.Fired(), len(f.Requests()))
		}
	}
}

func TestFaulty_Reset_ClearsRulesAndLog(t *testing.T) {
	f := wrap.Faults(silttest.Fill(t, 1))
	f.Add(wrap.Rule{})
	if _, err := f.Stat(context.Background(), "d/k00"); err == nil {
		t.Fatal("rule did not fire")
	}
	f.Reset()
	if _, err := f.Stat(context.Background(), "d/k00"); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
	if got := f.Requests(); len(got) != 1 || got[0] != (wrap.Request{Verb: wrap.VerbStat, Key: "d/k00"}) || f.Fired() != 0 {
		t.Errorf("after Reset: requests %v, fired %d", got, f.Fired())
	}
}

func TestFaulty_Add_RejectsBodyModeOffGet(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Add accepted CorruptBody on VerbPut")
		}
	}()
	wrap.Faults(mem.New()).Add(wrap.Rule{Verb: wrap.VerbPut, Mode: wrap.CorruptBody})
}
