package wrap_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
)

func TestProduction_Order_RetryOverStore(t *testing.T) {
	m := mem.New()
	b := wrap.Production(m, wrap.ProductionConfig{})
	if got, want := wrap.Layers(b), []string{"Retry", "*mem.Backend"}; !slices.Equal(got, want) {
		t.Fatalf("layers = %v, want %v", got, want)
	}
	if backend.Base(b) != m {
		t.Fatal("Base does not reach the store")
	}
}

func TestProduction_TestWrappers_SitBelowRetry(t *testing.T) {
	m := mem.New()
	put(t, m, "k", "v")
	f := wrap.Faults(wrap.Latency(m, wrap.LatencyConfig{}))
	b := wrap.Production(f, wrap.ProductionConfig{Retry: wrap.RetryConfig{Base: time.Nanosecond}})
	if got, want := wrap.Layers(b), []string{"Retry", "Faults", "Latency", "*mem.Backend"}; !slices.Equal(got, want) {
		t.Fatalf("layers = %v, want %v", got, want)
	}
	// An injected transport failure is absorbed by the production retry.
	f.Add(wrap.Rule{Verb: wrap.VerbStat, Nth: 1})
	if _, err := b.Stat(context.Background(), "k"); err != nil {
		t.Fatalf("Stat through Production: %v", err)
	}
	if f.Fired() != 1 {
		t.Errorf("fault fired %d times, want 1", f.Fired())
	}
}
