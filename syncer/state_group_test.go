package syncer

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func testState(t *testing.T) *state {
	t.Helper()
	st, err := openState(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.close() })
	return st
}

// Updates that arrive while one runs share the next transaction, and the
// state ends as if each had run alone: every record is there, durable when
// its update returned.
func TestState_ConcurrentUpdatesAllLand(t *testing.T) {
	st := testState(t)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := fmt.Sprintf("f/%02d", i)
			if err := st.update(func(t stx) error { return t.putFile(p, fileRecord{SHA256: "aa", Size: int64(i)}) }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	_ = st.view(func(tx stx) error {
		for i := range n {
			if r, ok := tx.file(fmt.Sprintf("f/%02d", i)); !ok || r.Size != int64(i) {
				t.Errorf("f/%02d: %+v, %v", i, r, ok)
			}
		}
		return nil
	})
}

// One update's error is its caller's alone: the updates it shared a
// transaction with are run again without it and land.
func TestState_FailedUpdateDoesNotUndoOthers(t *testing.T) {
	st := testState(t)
	boom := errors.New("boom")
	group := []*pending{
		{fn: func(t stx) error { return t.putFile("a", fileRecord{SHA256: "aa"}) }, done: make(chan error, 1)},
		{fn: func(t stx) error {
			if err := t.putFile("b", fileRecord{SHA256: "bb"}); err != nil {
				return err
			}
			return boom
		}, done: make(chan error, 1)},
		{fn: func(t stx) error { return t.putFile("c", fileRecord{SHA256: "cc"}) }, done: make(chan error, 1)},
	}
	commitGroup(st.db, group)
	for i, want := range []error{nil, boom, nil} {
		if got := <-group[i].done; !errors.Is(got, want) {
			t.Errorf("update %d: %v, want %v", i, got, want)
		}
	}
	_ = st.view(func(tx stx) error {
		for p, want := range map[string]bool{"a": true, "b": false, "c": true} {
			if _, ok := tx.file(p); ok != want {
				t.Errorf("%s recorded: %v, want %v", p, ok, want)
			}
		}
		return nil
	})
}

// A panicking update still answers every caller that shared its
// transaction, so none waits forever.
func TestState_PanickingUpdateAnswersEveryone(t *testing.T) {
	st := testState(t)
	group := []*pending{
		{fn: func(stx) error { panic("bad") }, done: make(chan error, 1)},
		{fn: func(t stx) error { return t.putFile("a", fileRecord{SHA256: "aa"}) }, done: make(chan error, 1)},
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		commitGroup(st.db, group)
	}()
	for i, p := range group {
		select {
		case err := <-p.done:
			if err == nil {
				t.Errorf("update %d: nil error from an aborted transaction", i)
			}
		default:
			t.Errorf("update %d: no answer", i)
		}
	}
}

// A panic in one update leaves the writer usable: the next update runs
// (before, a leader that panicked left every later update waiting).
func TestState_UpdateAfterPanicRuns(t *testing.T) {
	st := testState(t)
	func() {
		defer func() { _ = recover() }()
		_ = st.update(func(stx) error { panic("bad") })
	}()
	if err := st.update(func(t stx) error { return t.putFile("a", fileRecord{SHA256: "aa"}) }); err != nil {
		t.Fatal(err)
	}
}
