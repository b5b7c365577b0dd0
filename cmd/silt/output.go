package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/siltsync/silt/syncer"
)

// cli is one invocation: where output goes and how it is shaped.
type cli struct {
	cmd    *command
	stdout io.Writer
	stderr io.Writer
	json   bool // --json: one JSON object on stdout, nothing else there

	verbose     bool // -v: one line per file on stderr
	dryRun      bool // --dry-run: every planned change is listed
	jsonChanges int  // --json-changes

	cwd string // the working directory, when the cache was found above it
}

// printf writes human output; with --json it writes nothing.
func (c *cli) printf(format string, args ...any) {
	if !c.json {
		fmt.Fprintf(c.stdout, format, args...)
	}
}

// printJSON writes v as the command's one JSON object.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// result prints v as JSON, or calls human when --json is off.
func (c *cli) result(v any, human func()) error {
	if c.json {
		return c.printJSON(v)
	}
	human()
	return nil
}

// statsLine is the one-line human summary of an operation.
func statsLine(st syncer.Stats) string {
	f := st.Files
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(f.Downloaded, "downloaded")
	add(f.Uploaded, "uploaded")
	add(f.Deleted, "deleted remotely")
	add(f.Removed, "removed locally")
	add(f.Unchanged, "unchanged")
	add(f.Conflicts, "conflicts")
	if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	r := st.Requests
	reqs := r.Get + r.Put + r.List + r.Delete + r.Stat
	return fmt.Sprintf("%-8s seq %d: %s; %s down, %s up; %d request%s (%d get, %d put, %d list, %d delete, %d stat); %d local files examined; %.1f ms",
		st.Op, st.Seq, strings.Join(parts, ", "), size(st.Bytes.Down), size(st.Bytes.Up),
		reqs, plural(reqs), r.Get, r.Put, r.List, r.Delete, r.Stat, st.Local.Examined, st.Ms)
}

// printStats prints an operation's summary line and its conflicts.
func (c *cli) printStats(st syncer.Stats) {
	c.printf("%s\n", statsLine(st))
	for _, cf := range st.Conflicts {
		c.printf("  conflict: %s: %s\n", cf.Path, cf.Reason)
	}
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

// sumStats adds b's counts to a (for sync's and hydrate's totals).
func sumStats(a, b syncer.Stats) syncer.Stats {
	a.Files.Downloaded += b.Files.Downloaded
	a.Files.Uploaded += b.Files.Uploaded
	a.Files.Deleted += b.Files.Deleted
	a.Files.Removed += b.Files.Removed
	a.Files.Unchanged += b.Files.Unchanged
	a.Files.Conflicts += b.Files.Conflicts
	a.Bytes.Down += b.Bytes.Down
	a.Bytes.Up += b.Bytes.Up
	a.Requests.Get += b.Requests.Get
	a.Requests.Put += b.Requests.Put
	a.Requests.List += b.Requests.List
	a.Requests.Delete += b.Requests.Delete
	a.Requests.Stat += b.Requests.Stat
	a.Local.Examined += b.Local.Examined
	a.Phases = append(a.Phases, b.Phases...)
	a.Conflicts = append(a.Conflicts, b.Conflicts...)
	a.Changes = append(a.Changes, b.Changes...)
	a.ChangesOmitted += b.ChangesOmitted
	a.Ms += b.Ms
	a.Seq = max(a.Seq, b.Seq)
	return a
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
