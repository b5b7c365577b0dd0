package main

import (
	"context"
	flag "github.com/spf13/pflag"
	"log/slog"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
)

// logFlags declares --log-level and --log-format (every command's).
func (c *cli) logFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.logLevel, "log-level", "", "log on stderr at this level: debug (one line per request and per file), info (one per operation), warn; default: no log")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json (one object per line)")
}

// setupLog builds the logger the flags ask for, after parsing.
func (c *cli) setupLog() error {
	if c.logLevel == "" {
		return nil
	}
	var level slog.Level
	switch c.logLevel {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	default:
		return usagef("--log-level %q: want debug, info or warn", c.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.logFormat {
	case "text":
		c.logger = slog.New(slog.NewTextHandler(c.stderr, opts))
	case "json":
		c.logger = slog.New(slog.NewJSONHandler(c.stderr, opts))
	default:
		return usagef("--log-format %q: want text or json", c.logFormat)
	}
	return nil
}

// loggerKey carries a pointer to the invocation's logger in its context,
// so that opening a store (openURL) can wrap it once the flags are parsed.
type loggerKey struct{}

func withLogger(ctx context.Context, l **slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// logged wraps a freshly opened store in the request log when the
// invocation logs at debug.
func logged(ctx context.Context, b backend.Backend) backend.Backend {
	l, _ := ctx.Value(loggerKey{}).(**slog.Logger)
	if l == nil || *l == nil || !(*l).Enabled(ctx, slog.LevelDebug) {
		return b
	}
	return wrap.Log(b, *l)
}
