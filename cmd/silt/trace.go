package main

import (
	"context"
	"fmt"
	flag "github.com/spf13/pflag"
	"io"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// envTrace stands in for --trace.
const envTrace = "SILT_TRACE"

// traceFlag declares --trace (every command's).
func (c *cli) traceFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.traceTo, "trace", os.Getenv(envTrace),
		"write OpenTelemetry spans (one per operation and phase) as JSON lines to this file, or stderr, or stdout (not with --json); default $"+envTrace)
}

// setupTrace opens the span sink --trace names, after parsing. Spans are
// written as they end (a synchronous exporter), so a run cut short keeps
// those it finished.
func (c *cli) setupTrace() error {
	if c.traceTo == "" {
		return nil
	}
	var w io.Writer
	switch c.traceTo {
	case "stdout":
		if c.json {
			return usagef("--trace stdout: stdout carries the --json object; trace to stderr or a file")
		}
		w = c.stdout
	case "stderr":
		w = c.stderr
	default:
		f, err := os.OpenFile(c.traceTo, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return usagef("--trace: %v", err)
		}
		c.traceFile = f
		w = f
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	// service.name names silt in every span's resource (the SDK's default
	// is unknown_service:<binary>).
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "silt"), attribute.String("service.version", readBuildInfo().Version)))
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	c.traceProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	return nil
}

// tracer is the syncer's Config.Tracer: nil without --trace.
func (c *cli) tracer() trace.Tracer {
	if c.traceProvider == nil {
		return nil
	}
	return c.traceProvider.Tracer("github.com/siltsync/silt/cmd/silt")
}

// closeTrace flushes and closes the span sink.
func (c *cli) closeTrace() error {
	if c.traceProvider == nil {
		return nil
	}
	err := c.traceProvider.Shutdown(context.Background())
	if c.traceFile != nil {
		if cerr := c.traceFile.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("--trace %s: %w", c.traceTo, err)
	}
	return nil
}
