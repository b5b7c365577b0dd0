package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

// contentNamed is the condition the index sends for objects, packs, shards
// and history copies.
var contentNamed = backend.Cond{IfAbsent: true, ContentNamed: true}

// TestRetry_Put_ContentNamed_Regression_OneFaultFailedThePush: each PUT kind
// of a push (object, pack, shard, history copy) failed on one 503 or reset
// ("conditional write not retried, outcome unknown"); a content-named
// create is now resent, or settled by a Stat when it had landed.
func TestRetry_Put_ContentNamed_Regression_OneFaultFailedThePush(t *testing.T) {
	for _, key := range []string{"objects/ab/abcd", "packs/ab/abcd", "shards/ab/abcd", "history/00000000000000000001"} {
		for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter} {
			t.Run(key+"/"+mode.String(), func(t *testing.T) {
				g := newRig(backend.RetryConfig{})
				g.f.Add(wrap.Rule{Verb: wrap.VerbCondPut, Nth: 1, Mode: mode})
				_, err := backend.PutBytes(context.Background(), g.r, key, []byte("payload"), contentNamed)
				switch mode {
				case wrap.FailBefore:
					// Not stored: the Stat finds nothing, the resend stores it.
					if err != nil {
						t.Fatalf("err = %v, want the resend to succeed", err)
					}
				case wrap.FailAfter:
					// Stored, acknowledgement lost: the Stat settles it.
					if !backend.IsPrecondition(err) {
						t.Fatalf("err = %v, want ErrPrecondition (already stored)", err)
					}
				}
				if got := silttest.Read(t, g.m, key); got != "payload" {
					t.Errorf("stored %q", got)
				}
			})
		}
	}
}

// TestRetry_Put_Regression_DedupAnsweredByReset: versitygw answers a
// create-if-absent of a key that exists with a reset instead of 412; a
// deduplicating push of an existing object failed on it. The Stat after the
// reset finds the object, and the write is "already stored".
func TestRetry_Put_Regression_DedupAnsweredByReset(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	silttest.Put(t, g.m, "objects/ab/abcd", "payload")
	// Every create of the key is answered by a reset, whatever the store
	// said: a resend alone could never succeed.
	g.f.Add(wrap.Rule{Verb: wrap.VerbCondPut, Mode: wrap.FailAfter})
	_, err := backend.PutBytes(context.Background(), g.r, "objects/ab/abcd", []byte("payload"), contentNamed)
	if !backend.IsPrecondition(err) {
		t.Fatalf("err = %v, want ErrPrecondition (already stored)", err)
	}
	if c := g.c.Counts(); c.CondPut != 1 || c.Stat != 1 {
		t.Errorf("counts %+v, want one create and one stat", c)
	}
}

// TestRetry_Put_ContentNamedUnconditional_SettledAsSuccess: on a store
// without atomic create the index writes content-named keys
// unconditionally; a Stat that finds the key settles it as success.
func TestRetry_Put_ContentNamedUnconditional_SettledAsSuccess(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	g.f.Add(wrap.Rule{Verb: wrap.VerbPut, Mode: wrap.FailAfter})
	info, err := backend.PutBytes(context.Background(), g.r, "objects/ab/abcd", []byte("payload"), backend.Cond{ContentNamed: true})
	if err != nil || info.Size != 7 || info.Version == "" {
		t.Fatalf("info %+v, err %v; want the stored object's info", info, err)
	}
	if c := g.c.Counts(); c.Put != 1 || c.Stat != 1 {
		t.Errorf("counts %+v, want one put and one stat", c)
	}
}

// TestRetry_Put_Manifest_Regression_OutcomeUnknownTyped: a manifest
// compare-and-swap that fails on a 503 or lost acknowledgement is sent
// once and comes back as ErrOutcomeUnknown, for the commit to settle by
// reading back; a create-if-absent of a key that does not name its bytes
// (a lock, a namespace record) likewise.
func TestRetry_Put_Manifest_Regression_OutcomeUnknownTyped(t *testing.T) {
	for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter} {
		for _, name := range []string{"IfMatch", "IfAbsent"} {
			t.Run(mode.String()+"/"+name, func(t *testing.T) {
				g := newRig(backend.RetryConfig{})
				cond := backend.Cond{IfAbsent: true}
				if name == "IfMatch" {
					cond = backend.Cond{IfMatch: silttest.Put(t, g.m, "manifest", "v1").Version}
				}
				g.f.Add(wrap.Rule{Verb: wrap.VerbCondPut, Mode: mode})
				_, err := backend.PutBytes(context.Background(), g.r, "manifest", []byte("v2"), cond)
				if !errors.Is(err, backend.ErrOutcomeUnknown) || !errors.Is(err, wrap.ErrInjected) || !backend.IsRetryable(err) {
					t.Fatalf("err = %v, want ErrOutcomeUnknown wrapping the retryable failure", err)
				}
				if c := g.c.Counts(); c.CondPut > 1 || c.Stat != 0 || g.s.n() != 0 {
					t.Errorf("counts %+v, sleeps %d; want the write sent once, no stat, no wait", c, g.s.n())
				}
			})
		}
	}
}

// TestRetry_AttemptsError_ListsEveryFailure: the error after the budget says
// how many attempts were made and why each failed.
func TestRetry_AttemptsError_ListsEveryFailure(t *testing.T) {
	g := newRig(backend.RetryConfig{Attempts: 3})
	silttest.Put(t, g.m, "k", "v")
	g.f.Add(wrap.Rule{Verb: wrap.VerbStat, Nth: 1, Err: backend.Retryable("stat", "k", errors.New("503 SlowDown"))})
	g.f.Add(wrap.Rule{Verb: wrap.VerbStat, Nth: 2, Err: backend.Retryable("stat", "k", errors.New("connection reset"))})
	g.f.Add(wrap.Rule{Verb: wrap.VerbStat, Nth: 3, Err: backend.Retryable("stat", "k", errors.New("no response within 2s"))})
	_, err := g.r.Stat(context.Background(), "k")
	var ae *backend.AttemptsError
	if !errors.As(err, &ae) || len(ae.Failures) != 3 || !backend.IsRetryable(err) {
		t.Fatalf("err = %v, want an AttemptsError of 3 failures, retryable", err)
	}
	for _, want := range []string{"gave up after 3 attempts", "[1] 503 SlowDown", "[2] connection reset", "[3] no response within 2s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestRetry_Unreachable_ShortBudget: an endpoint that refuses connections
// gets 3 attempts, not the whole budget.
func TestRetry_Unreachable_ShortBudget(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	g.f.Add(wrap.Rule{Verb: wrap.VerbStat, Err: backend.Retryable("stat", "k", backend.ErrUnreachable)})
	_, err := g.r.Stat(context.Background(), "k")
	if !errors.Is(err, backend.ErrUnreachable) || len(g.f.Requests()) != 3 {
		t.Fatalf("err = %v after %d requests, want ErrUnreachable after 3", err, len(g.f.Requests()))
	}
}

// TestPortable_Put_ContentNamedWithIfMatch_Invalid: a content-named key is
// never replaced, so ContentNamed with IfMatch is the caller's bug.
func TestPortable_Put_ContentNamedWithIfMatch_Invalid(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	b := backend.Production(g.m)
	_, err := backend.PutBytes(context.Background(), b, "k", []byte("x"), backend.Cond{IfMatch: "v", ContentNamed: true})
	if !errors.Is(err, backend.ErrInvalidCond) {
		t.Fatalf("err = %v, want ErrInvalidCond", err)
	}
}
