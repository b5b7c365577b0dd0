package syncer

import (
	"context"
	"log/slog"
)

// logChange writes one debug record per change to Config.Logger. o.mu is
// held, so records come in completion order.
func (o *op) logChange(c Change) {
	l := o.s.cfg.Logger
	if l == nil || !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{slog.String("op", o.stats.Op), slog.String("path", c.Path), slog.String("action", string(c.Action))}
	if c.Bytes > 0 {
		attrs = append(attrs, slog.Int64("bytes", c.Bytes))
	}
	if c.Reason != "" {
		attrs = append(attrs, slog.String("reason", c.Reason))
	}
	if c.DryRun {
		attrs = append(attrs, slog.Bool("dry_run", true))
	}
	l.LogAttrs(context.Background(), slog.LevelDebug, "change", attrs...)
}

// logEnd writes one info record per finished operation (warn when it
// failed) with its counts and phase times.
func (o *op) logEnd(st Stats, err error) {
	l := o.s.cfg.Logger
	if l == nil {
		return
	}
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("op", st.Op), slog.Uint64("seq", st.Seq),
		slog.Int("downloaded", st.Files.Downloaded), slog.Int("uploaded", st.Files.Uploaded),
		slog.Int("deduplicated", st.Files.Deduplicated), slog.Int("deleted", st.Files.Deleted),
		slog.Int("removed", st.Files.Removed), slog.Int("unchanged", st.Files.Unchanged),
		slog.Int("conflicts", st.Files.Conflicts), slog.Int64("bytes_down", st.Bytes.Down), slog.Int64("bytes_up", st.Bytes.Up),
		slog.Int64("requests", st.Requests.Get+st.Requests.Put+st.Requests.List+st.Requests.Delete+st.Requests.Stat),
		slog.Float64("ms", st.Ms),
	}
	for _, p := range st.Phases {
		attrs = append(attrs, slog.Float64("phase_"+p.Name+"_ms", p.Ms))
	}
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	l.LogAttrs(context.Background(), level, "done", attrs...)
}
