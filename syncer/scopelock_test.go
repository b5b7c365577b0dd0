package syncer

import (
	"context"
	"runtime"
	"testing"
)

func granted(ch <-chan func()) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// acquireAsync starts an acquire and returns once it is queued: the
// request is in the queue when this returns, granted or not.
func acquireAsync(t *testing.T, l *scopeLocks, sc lockScope) <-chan func() {
	t.Helper()
	queued := make(chan struct{})
	out := make(chan func(), 1)
	l.mu.Lock()
	n := len(l.queue)
	l.mu.Unlock()
	go func() {
		release, err := l.acquire(context.Background(), sc)
		if err != nil {
			t.Error(err)
			close(out)
			return
		}
		out <- release
	}()
	go func() {
		defer close(queued)
		for {
			l.mu.Lock()
			m := len(l.queue)
			l.mu.Unlock()
			if m > n {
				return
			}
			runtime.Gosched()
		}
	}()
	<-queued
	return out
}

func TestScopeLocks_Acquire_DisjointRunTogether(t *testing.T) {
	var l scopeLocks
	a := acquireAsync(t, &l, scopePaths("data/t/m2"))
	b := acquireAsync(t, &l, scopePaths("data/t/m3"))
	ra, rb := <-a, <-b // both granted while the other holds
	ra()
	rb()
}

func TestScopeLocks_Acquire_LaterNeverOvertakesEarlierOverlapping(t *testing.T) {
	var l scopeLocks
	first := <-acquireAsync(t, &l, scopePaths("data/a"))
	all := acquireAsync(t, &l, scopeAll())        // waits for data/a
	other := acquireAsync(t, &l, scopePaths("b")) // disjoint from data/a, but not from all, which came first
	read := acquireAsync(t, &l, lockScope{mode: lockRead})
	release := <-read // a read-only operation waits for nothing
	release()
	if granted(all) || granted(other) {
		t.Fatal("granted while an earlier overlapping request holds or waits")
	}
	first()
	releaseAll := <-all
	if granted(other) {
		t.Fatal("b granted while the unscoped request, which arrived first, holds")
	}
	releaseAll()
	(<-other)()
}

func TestScopeLocks_Acquire_DirectoryAndFileUnderItConflict(t *testing.T) {
	for _, tc := range []struct {
		a, b lockScope
		want bool
	}{
		{scopePaths("data/a"), scopePaths("data/a/x"), true},
		{scopePaths("data/a/x"), scopePaths("data/a"), true},
		{scopePaths("data/a"), scopePaths("data/ab"), false},
		{scopePaths("data/a"), scopeAll(), true},
		{scopePaths("data/a"), lockScope{}, false},
		{lockScope{mode: lockRead}, scopeAll(), false},
		{lockScope{mode: lockClose}, lockScope{mode: lockRead}, true},
	} {
		if got := tc.a.conflicts(tc.b); got != tc.want {
			t.Errorf("%+v conflicts %+v = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestScopeLocks_Acquire_CancelGivesUpItsPlace(t *testing.T) {
	var l scopeLocks
	held, _ := l.acquire(context.Background(), scopePaths("a"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.acquire(ctx, scopePaths("a"))
		done <- err
	}()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("acquire after cancel succeeded while the scope was held")
	}
	held()
	r, err := l.acquire(context.Background(), scopePaths("a"))
	if err != nil {
		t.Fatal(err)
	}
	r()
}
