package backoff_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siltsync/silt/internal/backoff"
)

func TestSleep_DoneContext_ReturnsItsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range []time.Duration{0, -1, time.Hour} {
		if err := backoff.Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(cancelled, %v) = %v, want context.Canceled", d, err)
		}
	}
}

func TestSleep_LiveContext_ReturnsNil(t *testing.T) {
	if err := backoff.Sleep(context.Background(), time.Microsecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
	if err := backoff.Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
}

func TestExp_Cap_DoublesUpToMax(t *testing.T) {
	e := backoff.Exp{Base: 10 * time.Millisecond, Max: 2 * time.Second}
	for i, want := range []time.Duration{10, 20, 40, 80, 160, 320, 640, 1280, 2000, 2000} {
		if got := e.Cap(i); got != want*time.Millisecond {
			t.Errorf("Cap(%d) = %v, want %v", i, got, want*time.Millisecond)
		}
	}
	if got := e.Cap(1 << 30); got != e.Max {
		t.Errorf("Cap(huge) = %v, want Max %v", got, e.Max)
	}
}

func TestExp_Wait_WithinCap(t *testing.T) {
	e := backoff.Exp{Base: time.Millisecond, Max: 8 * time.Millisecond}
	for i := range 6 {
		for range 200 {
			if d := e.Wait(i); d < 0 || d > e.Cap(i) {
				t.Fatalf("Wait(%d) = %v, want within [0, %v]", i, d, e.Cap(i))
			}
		}
	}
}

func TestSpread_WithinHalfToThreeHalves(t *testing.T) {
	if got := backoff.Spread(0); got != 0 {
		t.Errorf("Spread(0) = %v, want 0", got)
	}
	d := 100 * time.Millisecond
	for range 500 {
		if got := backoff.Spread(d); got < d/2 || got > d/2+d {
			t.Fatalf("Spread(%v) = %v, want within [%v, %v]", d, got, d/2, d/2+d)
		}
	}
}
