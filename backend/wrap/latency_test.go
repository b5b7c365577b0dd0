package wrap_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

// verbOps sends one request of each verb through b.
func verbOps(ctx context.Context) map[wrap.Verb]func(b backend.Backend) error {
	return map[wrap.Verb]func(b backend.Backend) error{
		wrap.VerbGet: func(b backend.Backend) error {
			_, _, err := b.Get(ctx, "k", backend.GetOptions{})
			return err
		},
		wrap.VerbPut: func(b backend.Backend) error {
			_, err := b.Put(ctx, "k", strings.NewReader("new"), 3, backend.Cond{})
			return err
		},
		wrap.VerbCondPut: func(b backend.Backend) error {
			_, err := b.Put(ctx, "k2", strings.NewReader("new"), 3, backend.Cond{IfAbsent: true})
			return err
		},
		wrap.VerbDelete: func(b backend.Backend) error { return b.Delete(ctx, "k", backend.Cond{}) },
		wrap.VerbStat:   func(b backend.Backend) error { _, err := b.Stat(ctx, "k"); return err },
		wrap.VerbList: func(b backend.Backend) error {
			return b.List(ctx, "", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil })
		},
	}
}

func TestLatency_ContextDoneDuringDelay_NothingSent(t *testing.T) {
	for verb := range verbOps(context.Background()) {
		t.Run(string(verb), func(t *testing.T) {
			m := silttest.Fill(t, 0)
			silttest.Put(t, m, "k", "old")
			c := wrap.Count(m)
			// An hour-long delay: only the context can end the wait.
			l := wrap.Latency(c, wrap.LatencyConfig{Delay: time.Hour})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			err := verbOps(ctx)[verb](l)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
			if got := c.Counts(); got != (wrap.Counts{}) {
				t.Errorf("requests sent = %+v, want none", got)
			}
			if got := silttest.Read(t, m, "k"); got != "old" {
				t.Errorf("k = %q, want it untouched", got)
			}
		})
	}
}

func TestLatency_CancelledContext_NothingSent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := silttest.Fill(t, 0)
	c := wrap.Count(m)
	l := wrap.Latency(c, wrap.LatencyConfig{Delay: time.Hour})
	if _, err := l.Put(ctx, "k", strings.NewReader("x"), 1, backend.Cond{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := c.Counts().Total(); got != 0 {
		t.Errorf("requests sent = %d, want 0", got)
	}
}

func TestLatency_Delay_AppliedBeforeRequest(t *testing.T) {
	const d = 5 * time.Millisecond
	c := wrap.Count(silttest.Fill(t, 1))
	l := wrap.Latency(c, wrap.LatencyConfig{Delay: d})
	start := time.Now()
	if _, err := l.Stat(context.Background(), "d/k00"); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < d {
		t.Errorf("elapsed = %v, want at least %v", elapsed, d)
	}
	if got := c.Counts(); got != (wrap.Counts{Stat: 1}) {
		t.Errorf("counts = %+v, want one Stat", got)
	}
}

func TestLatency_List_DelayPerPage(t *testing.T) {
	const d = 5 * time.Millisecond
	l := wrap.Latency(silttest.Fill(t, 7), wrap.LatencyConfig{PerVerb: map[wrap.Verb]time.Duration{wrap.VerbList: d}})
	start := time.Now()
	pages, keys, err := silttest.ListPages(l, "d/", 3)
	if err != nil {
		t.Fatal(err)
	}
	if pages != 3 || keys != 7 {
		t.Fatalf("got %d pages, %d keys; want 3, 7", pages, keys)
	}
	if elapsed := time.Since(start); elapsed < 3*d {
		t.Errorf("elapsed = %v, want at least %v (one delay per page)", elapsed, 3*d)
	}
}

func TestLatency_PerVerb_OverridesDelay(t *testing.T) {
	m := silttest.Fill(t, 1)
	// Stat waits an hour, Get not at all: if the override leaked to Get,
	// the Get below would hit the deadline.
	l := wrap.Latency(m, wrap.LatencyConfig{
		Delay:   time.Hour,
		PerVerb: map[wrap.Verb]time.Duration{wrap.VerbGet: 0},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := backend.ReadAll(ctx, l, "d/k00", backend.GetOptions{}, 0); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if _, err := l.Stat(ctx, "d/k00"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stat err = %v, want context.DeadlineExceeded", err)
	}
}

func TestLatency_Unwrap_ReturnsInner(t *testing.T) {
	m := silttest.Fill(t, 0)
	l := wrap.Latency(m, wrap.LatencyConfig{})
	if u, ok := l.(backend.Unwrapper); !ok || u.Unwrap() != m {
		t.Fatalf("Unwrap does not return the inner backend")
	}
}
