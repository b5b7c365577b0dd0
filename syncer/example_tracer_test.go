package syncer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

// Config.Tracer takes any OpenTelemetry tracer. Here spans go to the
// stdout exporter (one JSON object per span); a host would pass its own
// provider's tracer, and silt's spans would join its traces. The example
// writes them to a buffer to print only their names, which are stable;
// exporting to os.Stdout needs no buffer: stdouttrace.New() alone.
func ExampleConfig_tracer() {
	ctx := context.Background()
	var out bytes.Buffer
	exp, err := stdouttrace.New(stdouttrace.WithWriter(&out))
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)

	b, err := backend.Open(ctx, "mem://example-tracer")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	dir, err := os.MkdirTemp("", "silt-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir, Tracer: tp.Tracer("example")})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello"), 0o644); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Push(ctx, syncer.PushOptions{All: true}); err != nil {
		log.Fatal(err)
	}

	dec := json.NewDecoder(&out)
	for dec.More() {
		var span struct {
			Name       string
			Attributes []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		if err := dec.Decode(&span); err != nil {
			log.Fatal(err)
		}
		fmt.Print(span.Name)
		for _, a := range span.Attributes {
			if a.Key == "silt.files.uploaded" {
				fmt.Printf(" uploaded=%v", a.Value.Value)
			}
		}
		fmt.Println()
	}
	// Output:
	// silt.push.walk
	// silt.push.index
	// silt.push.upload
	// silt.push.commit
	// silt.push uploaded=1
}
