package syncer

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/siltsync/silt/backend/wrap"
)

// opTrace is the OpenTelemetry side of one operation (Config.Tracer): a
// span for the operation and, as its children, one per phase. Spans are
// made after the fact, with the times the operation and each phase began
// and ended, so the engine marks a phase in one call (op.mark) whether or
// not it is traced, and an operation abandoned before its first phase (a
// push whose scope grew, Status's request counter) leaves no open span.
// With no Tracer it costs nil checks.
type opTrace struct {
	tracer trace.Tracer
	parent context.Context // the caller's, until the span starts
	ctx    context.Context // carries the operation's span
	span   trace.Span
	last   wrap.Counts // request counts when the current phase began
}

// startTrace remembers the caller's ctx, the parent of the span.
func (o *op) startTrace(ctx context.Context) {
	if t := o.s.cfg.Tracer; t != nil {
		o.tr.tracer, o.tr.parent = t, ctx
	}
}

// opSpan starts the operation's span, back-dated to its start, once.
func (o *op) opSpan() bool {
	if o.tr.tracer == nil {
		return false
	}
	if o.tr.span == nil {
		o.tr.ctx, o.tr.span = o.tr.tracer.Start(o.tr.parent, "silt."+o.stats.Op, trace.WithTimestamp(o.start),
			trace.WithAttributes(attribute.String("silt.op", o.stats.Op)))
	}
	return true
}

// tracePhase records the phase that ran from begun to now.
func (o *op) tracePhase(name string, begun, now time.Time) {
	if !o.opSpan() {
		return
	}
	c := o.b.Counts()
	d := c.Sub(o.tr.last)
	o.tr.last = c
	_, span := o.tr.tracer.Start(o.tr.ctx, "silt."+o.stats.Op+"."+name, trace.WithTimestamp(begun),
		trace.WithAttributes(attribute.String("silt.phase", name), attribute.Int64("silt.requests", d.Total()),
			attribute.Int64("silt.bytes_down", d.BytesDown), attribute.Int64("silt.bytes_up", d.BytesUp)))
	span.End(trace.WithTimestamp(now))
}

// traceError records err on the operation's span.
func (o *op) traceError(err error) {
	if err == nil || !o.opSpan() {
		return
	}
	o.tr.span.RecordError(err)
	o.tr.span.SetStatus(codes.Error, err.Error())
}

// endTrace ends the operation's span with its statistics.
func (o *op) endTrace(st Stats) {
	if !o.opSpan() {
		return
	}
	scope := "(all)"
	if o.scope != nil && !o.scope.all() {
		scope = strings.Join(o.scope.paths, ",")
	}
	o.tr.span.SetAttributes(
		attribute.String("silt.scope", scope), attribute.Int64("silt.seq", int64(st.Seq)), attribute.Bool("silt.dry_run", o.dryRun),
		attribute.Int("silt.files.downloaded", st.Files.Downloaded), attribute.Int("silt.files.uploaded", st.Files.Uploaded),
		attribute.Int("silt.files.deduplicated", st.Files.Deduplicated), attribute.Int("silt.files.deleted", st.Files.Deleted),
		attribute.Int("silt.files.removed", st.Files.Removed), attribute.Int("silt.files.unchanged", st.Files.Unchanged),
		attribute.Int("silt.files.conflicts", st.Files.Conflicts), attribute.Int("silt.files.examined", st.Local.Examined),
		attribute.Int64("silt.requests", st.Counts.Total()), attribute.Int64("silt.requests.get", st.Requests.Get),
		attribute.Int64("silt.requests.put", st.Requests.Put), attribute.Int64("silt.requests.list", st.Requests.List),
		attribute.Int64("silt.requests.delete", st.Requests.Delete), attribute.Int64("silt.requests.stat", st.Requests.Stat),
		attribute.Int64("silt.bytes_down", st.Bytes.Down), attribute.Int64("silt.bytes_up", st.Bytes.Up))
	o.tr.span.End()
	o.tr.tracer = nil // a second finish ends nothing
}
