package main

import (
	"encoding/json"
	"fmt"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/siltsync/silt/syncer"
)

// cli is one invocation: where output goes and how it is shaped.
type cli struct {
	cmd    *command
	stdout io.Writer
	stderr io.Writer
	json   bool // --json: one JSON object on stdout, nothing else there
	// timeout is --timeout: how long a store request, its retries counted,
	// may make no progress (backend.Options.Timeout).
	timeout time.Duration
	// wait is --wait: how long to wait for another process holding the cache.
	wait time.Duration
	// profile and gcsCredentials are --profile and --gcs-credentials,
	// applied to the s3:// and gs:// URLs the command opens.
	profile, gcsCredentials string
	// passwordFile is --password-file: the passphrase of an encrypted
	// bucket (else $SILT_PASSWORD).
	passwordFile string

	verbose     bool // -v: one line per file on stderr
	dryRun      bool // --dry-run: every planned change is listed
	jsonChanges int  // --json-changes
	listChanges bool // the command lists changes itself: no line per change on stderr

	cwd      string // the working directory, when the cache was found above it
	dirGiven bool   // --dir was given: hints repeat it

	// out is the --json result, printed once when the command ends: alone
	// on success, with the error merged in on failure (exactly one object).
	out any

	signal *signalCause // the signal that cut the run short, if any

	ran bool // the command's run began: an error after it is the command's, not a usage error

	logLevel, logFormat string       // --log-level, --log-format
	logger              *slog.Logger // nil: no log

	meter *meter // the progress line on a terminal, if any

	lazy func(string) bool // pull --lazy: the syncer's Config.Lazy

	traceTo       string                   // --trace: "", "stdout", "stderr" or a file
	traceFile     *os.File                 // the --trace file, closed by closeTrace
	traceProvider *sdktrace.TracerProvider // nil without --trace
}

// printf writes human output; with --json it writes nothing.
func (c *cli) printf(format string, args ...any) {
	if !c.json {
		c.meter.clear()
		fmt.Fprintf(c.stdout, format, args...)
	}
}

// printJSON writes v as the command's one JSON object.
func (c *cli) printJSON(v any) error { return writeJSON(c.stdout, v) }

// writeJSON writes v indented, with "&", "<" and ">" as themselves: the
// output is read by people and JSON parsers, never embedded in HTML.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// result keeps v as the --json result (printed when the command ends, see
// out), or calls human when --json is off.
func (c *cli) result(v any, human func()) error {
	if c.json {
		c.out = v
		return nil
	}
	human()
	return nil
}

// partial keeps the statistics of an operation that failed part way, so
// that the --json error object carries them.
func (c *cli) partial(v any) {
	if c.out == nil {
		c.out = v
	}
}

// flushJSON prints the kept --json result, with fields merged in (the
// error, its exit code and hint). A result that is not an object goes
// under "result".
func (c *cli) flushJSON(extra map[string]any) error {
	if c.out == nil && extra == nil {
		return nil
	}
	obj := map[string]any{}
	if c.out != nil {
		data, err := json.Marshal(c.out)
		if err != nil {
			return err
		}
		if json.Unmarshal(data, &obj) != nil {
			obj = map[string]any{"result": c.out}
		}
	}
	for k, v := range extra {
		obj[k] = v
	}
	c.out = nil
	return c.printJSON(obj)
}

// statsLine is the one-line human summary of an operation.
func statsLine(st syncer.Stats) string { return statsLineDry(st, false) }

// statsLineDry is statsLine; a dry run's counts say what would happen.
func statsLineDry(st syncer.Stats, dry bool) string {
	r := st.Requests
	reqs := r.Get + r.Put + r.List + r.Delete + r.Stat
	return fmt.Sprintf("%-8s seq %d: %s; %s down, %s up; %d request%s (%d get, %d put, %d list, %d delete, %d stat); %d local file%s examined; %.1f ms",
		st.Op, st.Seq, fileCounts(st, dry), size(st.Bytes.Down), size(st.Bytes.Up),
		reqs, plural(reqs), r.Get, r.Put, r.List, r.Delete, r.Stat, st.Local.Examined, plural(int64(st.Local.Examined)), st.Ms)
}

// fileCounts is the file counts of an operation's summary line: every
// file counted once ("7 uploaded, 2 deduplicated, 1 unchanged").
func fileCounts(st syncer.Stats, dry bool) string {
	f := st.Files
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	conflicts := "conflicts"
	if f.Conflicts == 1 {
		conflicts = "conflict"
	}
	if dry {
		add(f.Uploaded, "to upload")
		add(f.Deleted, "to delete remotely")
	} else {
		add(f.Downloaded, "downloaded")
		add(f.Uploaded, "uploaded")
		add(f.Deduplicated, "deduplicated")
		add(f.Deleted, "deleted remotely")
		add(f.Removed, "removed locally")
	}
	add(f.Conflicts, conflicts)
	if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	add(f.Unchanged, "unchanged")
	add(f.Excluded, "excluded")
	if f.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped: %s", f.Skipped, skipKinds(st)))
	}
	return strings.Join(parts, ", ")
}

// printStats prints an operation's summary line and its conflicts.
func (c *cli) printStats(st syncer.Stats) {
	c.printf("%s\n", statsLineDry(st, c.dryRun))
	for _, cf := range st.Conflicts {
		c.printf("  conflict: %s: %s\n", shown(cf.Path), cf.Reason)
	}
}

// shown is a path as a human line prints it: as it is when every rune is
// printable, else Go-quoted (as git's core.quotePath and GNU ls do), so a
// name holding a newline, an escape sequence or bytes that are not UTF-8
// can neither break the line nor drive the terminal. --json prints the
// path unchanged, JSON-escaped.
func shown(p string) string {
	if !utf8.ValidString(p) || strings.HasPrefix(p, `"`) || strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(p)
	}
	return p
}

// size formats a byte count the way rclone does.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// count is n and what, plural unless n is 1: "1 conflict", "2 conflicts".
func count[N ~int | ~int64 | ~uint64](n N, what string) string {
	return fmt.Sprintf("%d %s%s", n, what, plural(int64(n)))
}

// countOf is count for a noun whose plural is not what+"s".
func countOf[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// skipKinds names what a walk skipped, from the listed entries: "symlinks",
// or "2 symlinks, 1 named pipe" when there are several kinds.
func skipKinds(st syncer.Stats) string {
	n := map[string]int{}
	var kinds []string
	for _, sk := range st.Skipped {
		if n[sk.Kind] == 0 {
			kinds = append(kinds, sk.Kind)
		}
		n[sk.Kind]++
	}
	slices.Sort(kinds)
	if len(kinds) == 1 && n[kinds[0]] == 1 {
		return kinds[0]
	}
	if len(kinds) == 1 {
		return kinds[0] + "s"
	}
	var out []string
	for _, k := range kinds {
		s := fmt.Sprintf("%d %s", n[k], k)
		if n[k] > 1 {
			s += "s"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "not regular files"
	}
	return strings.Join(out, ", ")
}
