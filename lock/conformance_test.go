package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/lock"
)

// TestLock_Conformance runs the host contract's L1-L9 (host-contract.md
// 4.2) in sequence on one lock instance, as the host's suite does.
func TestLock_Conformance(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		l := newLock(t, f.new(t), ".datastore.lock", lock.Options{})

		// L1: free before acquire.
		if info, err := l.Inspect(ctx); err != nil || info != nil {
			t.Fatalf("L1: Inspect before acquire = %v, %v; want nil, nil", info, err)
		}
		// L2: held after acquire, with the holder's fields.
		lease, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("L2: %v", err)
		}
		info, err := l.Inspect(ctx)
		if err != nil || info == nil {
			t.Fatalf("L2: Inspect after acquire = %v, %v", info, err)
		}
		if info.Holder == "" || info.PID == 0 || info.AcquiredAt.IsZero() || info.TTL != lock.DefaultTTL {
			t.Errorf("L2: info %+v lacks holder, pid, acquiredAt or ttl", *info)
		}
		if info.Nonce != lease.Nonce() || info.Token != lease.Token() {
			t.Errorf("L2: info nonce %q token %d; lease has %q, %d", info.Nonce, info.Token, lease.Nonce(), lease.Token())
		}
		// L3: free after release.
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("L3: %v", err)
		}
		if info, err := l.Inspect(ctx); err != nil || info != nil {
			t.Fatalf("L3: Inspect after release = %v, %v; want nil, nil", info, err)
		}
		if ctxErr := lease.Context().Err(); ctxErr == nil {
			t.Error("L3: lease context still live after release")
		}
		// L4: release is idempotent.
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("L4: second release: %v", err)
		}
		// L5, L6: WithLock returns fn's result and releases.
		got, err := lock.WithLock(ctx, l, func(ctx context.Context, lease *lock.Lease) (int, error) {
			if holderNonce(t, l) != lease.Nonce() {
				t.Error("L5: not held inside WithLock")
			}
			return 42, nil
		})
		if got != 42 || err != nil {
			t.Fatalf("L5: WithLock = %d, %v; want 42, nil", got, err)
		}
		if n := holderNonce(t, l); n != "" {
			t.Fatalf("L6: held by %s after WithLock", n)
		}
		// L7: released when fn fails, and fn's error comes back.
		boom := errors.New("boom")
		if _, err := lock.WithLock(ctx, l, func(context.Context, *lock.Lease) (int, error) { return 0, boom }); !errors.Is(err, boom) {
			t.Fatalf("L7: WithLock error = %v; want boom", err)
		}
		if n := holderNonce(t, l); n != "" {
			t.Fatalf("L7: held by %s after failed WithLock", n)
		}
		// L8: ForceRelease with the holder's nonce frees the lock.
		lease, err = l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nonce := holderNonce(t, l)
		if nonce == "" {
			t.Fatal("L8: no nonce")
		}
		if ok, err := l.ForceRelease(ctx, nonce); !ok || err != nil {
			t.Fatalf("L8: ForceRelease(holder's nonce) = %v, %v; want true, nil", ok, err)
		}
		if n := holderNonce(t, l); n != "" {
			t.Fatalf("L8: held by %s after ForceRelease", n)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("L8: release of a force-released lease: %v", err)
		}
		// L9: ForceRelease with a wrong nonce does nothing.
		lease, err = l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, wrong := range []string{"wrong-nonce-value", ""} {
			if ok, err := l.ForceRelease(ctx, wrong); ok || err != nil {
				t.Fatalf("L9: ForceRelease(%q) = %v, %v; want false, nil", wrong, ok, err)
			}
		}
		if n := holderNonce(t, l); n != lease.Nonce() {
			t.Fatalf("L9: holder %q after wrong-nonce ForceRelease; want %q", n, lease.Nonce())
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNew_NoConditions_NotSupported(t *testing.T) {
	_, err := lock.New(unconditional{mem.New()}, "k.lock", lock.Options{})
	if !errors.Is(err, backend.ErrNotSupported) {
		t.Fatalf("New on a backend without conditions: %v; want ErrNotSupported", err)
	}
}

func TestNew_BadOptions(t *testing.T) {
	for _, tc := range []struct {
		key  string
		opts lock.Options
	}{
		{"../escape", lock.Options{}},
		{"k.lock", lock.Options{TTL: time.Microsecond}},
		{"k.lock", lock.Options{RetryInterval: -time.Second}},
	} {
		if _, err := lock.New(mem.New(), tc.key, tc.opts); err == nil {
			t.Errorf("New(%q, %+v) succeeded", tc.key, tc.opts)
		}
	}
}

func TestLock_Acquire_UnreadableObjectRefused(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	for _, body := range []string{"not json", `{"format": 2, "token": 9}`} {
		if _, err := backend.PutBytes(ctx, b, "k.lock", []byte(body), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
		l := newLock(t, b, "k.lock", lock.Options{MaxWait: -1})
		if _, err := l.Acquire(ctx); !errors.Is(err, lock.ErrFormat) {
			t.Errorf("Acquire over %q: %v; want ErrFormat", body, err)
		}
		if _, err := l.Inspect(ctx); !errors.Is(err, lock.ErrFormat) {
			t.Errorf("Inspect of %q: %v; want ErrFormat", body, err)
		}
	}
}

func TestLock_Acquire_TimeoutNamesHolder(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		b := f.new(t)
		lease, err := newLock(t, b, "k.lock", lock.Options{Holder: "alice@build-7"}).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release(ctx)

		wc := newFakeClock(time.Now())
		w := newLock(t, b, "k.lock", lock.Options{Holder: "bob", Clock: wc, RetryInterval: time.Second, MaxWait: 5 * time.Second})
		res := acquireAsync(ctx, w)
		for wc.waitTimer(t, anyTimer, res.done) {
			wc.Advance(time.Second)
		}
		got := res
		var te *lock.TimeoutError
		if !errors.Is(got.err, lock.ErrTimeout) || !errors.As(got.err, &te) {
			t.Fatalf("Acquire of a held lock: %v; want a *TimeoutError", got)
		}
		if te.Key != "k.lock" || te.Holder.Holder != "alice@build-7" || te.Holder.Nonce != lease.Nonce() || te.Waited < 5*time.Second {
			t.Errorf("TimeoutError = %+v; want key k.lock, holder alice@build-7, nonce %s, waited >= 5s", *te, lease.Nonce())
		}
		if !strings.Contains(te.Error(), "alice@build-7") {
			t.Errorf("message %q does not name the holder", te.Error())
		}

		// A negative MaxWait tries once.
		once := newLock(t, b, "k.lock", lock.Options{MaxWait: -1})
		if _, err := once.Acquire(ctx); !errors.Is(err, lock.ErrTimeout) {
			t.Errorf("single attempt on a held lock: %v; want ErrTimeout", err)
		}
	})
}

// TestLock_Acquire_TokensIncrease: 20 acquisitions by three lock instances,
// ended by Release or by another's ForceRelease, get strictly increasing
// tokens.
func TestLock_Acquire_TokensIncrease(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		b := f.new(t)
		var locks []*lock.Lock
		for range 3 {
			locks = append(locks, newLock(t, b, "models/m1/.lock", lock.Options{}))
		}
		var last uint64
		for i := range 20 {
			lease, err := locks[i%3].Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if lease.Token() <= last {
				t.Fatalf("acquisition %d: token %d after %d", i, lease.Token(), last)
			}
			if f.cas && lease.Token() != last+1 {
				t.Errorf("acquisition %d: token %d; want %d (one per acquisition)", i, lease.Token(), last+1)
			}
			last = lease.Token()
			if i%4 == 3 {
				if ok, err := locks[(i+1)%3].ForceRelease(ctx, lease.Nonce()); !ok || err != nil {
					t.Fatalf("ForceRelease = %v, %v", ok, err)
				}
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}
