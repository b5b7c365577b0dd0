package watch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
	"github.com/siltsync/silt/watch"
)

// TestRun_Latency_WriteToOtherWatchingCache measures, at the default
// poll (1 s) and debounce (200 ms), the time from a write in one watching
// cache to the file in another, and the requests an idle watch sends in a
// minute. It takes about two minutes, so it runs only with
// SILT_WATCH_LATENCY=1 (BENCHMARKS.md, "Watch mode").
func TestRun_Latency_WriteToOtherWatchingCache(t *testing.T) {
	if os.Getenv("SILT_WATCH_LATENCY") == "" {
		t.Skip("SILT_WATCH_LATENCY not set: the latency measurement takes about two minutes")
	}
	stores := map[string]func(t *testing.T) backend.Backend{
		"file": func(t *testing.T) backend.Backend { _, b := bucket(t); return b },
		"gofakes3": func(t *testing.T) backend.Backend {
			f := silttest.NewS3Fake(t)
			d, err := s3.New(context.Background(), s3.Config{Bucket: f.Bucket(t), Endpoint: f.URL, UsePathStyle: true,
				DisableConditionalDelete: true, AWSConfig: silttest.StaticAWS()})
			if err != nil {
				t.Fatal(err)
			}
			b := backend.Production(d) // the layers backend.Open puts over a driver
			t.Cleanup(func() { b.Close() })
			return b
		},
	}
	for _, name := range []string{"file", "gofakes3"} {
		t.Run(name, func(t *testing.T) {
			b := stores[name](t)
			const writes = 20
			ca, cb := wrap.Count(b), wrap.Count(b)
			a, other := cache(t, ca), cache(t, cb)
			opts := watch.Options{Walk: watch.DefaultWalk} // the defaults: poll 1 s, debounce 200 ms
			wa := start(t, a, opts, nil)
			wb := start(t, other, opts, nil)
			var lat []time.Duration
			for i := range writes {
				p, body := fmt.Sprintf("lat/%02d", i), fmt.Sprint("write ", i)
				// A write at a random moment of the other cache's poll
				// period: back to back, each write would follow a poll
				// and wait one whole period, the worst case every time.
				time.Sleep(rand.N(watch.DefaultPoll))
				from := wb.len()
				t0 := time.Now()
				write(t, a.Root(), p, body)
				wb.wait(t, from, "the write in the other cache", landed(other.Root(), p, body))
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			t.Logf("%s: write in one watching cache to file in the other, %d writes: median %v, p90 %v, max %v, min %v",
				name, writes, lat[writes/2].Round(time.Millisecond), lat[writes*9/10].Round(time.Millisecond),
				lat[writes-1].Round(time.Millisecond), lat[0].Round(time.Millisecond))
			if lat[writes/2] > 2*time.Second {
				t.Errorf("median latency %v, goal < 2 s", lat[writes/2])
			}
			// Idle: a whole minute of both watches with nothing changing
			// (the walk, every minute, sends nothing).
			_ = wa
			before := cb.Counts()
			time.Sleep(time.Minute) // the quantity measured is a minute, not a synchronisation
			idle := cb.Counts().Sub(before)
			t.Logf("%s: idle watch, one minute: %d requests (%d get, %d put, %d cond put, %d list, %d stat, %d delete)",
				name, idle.Total(), idle.Get, idle.Put, idle.CondPut, idle.List, idle.Stat, idle.Delete)
			if idle.Total() > 61 || idle.Put+idle.CondPut+idle.Delete+idle.List > 0 {
				t.Errorf("idle minute cost %+v, want about 60 gets", idle)
			}
		})
	}
}
