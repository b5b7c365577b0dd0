package main

import (
	"fmt"
	flag "github.com/spf13/pflag"
	"sync"

	"github.com/siltsync/silt/syncer"
)

// defaultJSONChanges bounds the changes array of --json by default: enough
// to read, small enough that a million-file pull stays one sane object.
const defaultJSONChanges = 1000

// changeFlags declares --json-changes on a command that moves files (-v is
// every command's).
func (c *cli) changeFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.jsonChanges, "json-changes", defaultJSONChanges, "with --json: list at most this many per-file changes (the rest are counted in changes_omitted)")
}

// maxChanges is the syncer's Config.MaxChanges for this invocation.
func (c *cli) maxChanges() int {
	if c.jsonChanges <= 0 {
		return -1 // keep none, count them all
	}
	return c.jsonChanges
}

// onChange returns the syncer callback that prints one line per file on
// stderr (with -v, or always for a dry run), or nil.
func (c *cli) onChange() func(syncer.Change) {
	if (!c.verbose && !c.dryRun) || c.listChanges {
		return nil
	}
	var mu sync.Mutex
	term := isTerminal(c.stderr)
	return func(ch syncer.Change) {
		mu.Lock()
		defer mu.Unlock()
		if term {
			c.meter.clear()
		}
		fmt.Fprintln(c.stderr, changeLine(ch))
	}
}

// changeLine is the human line of one change: "upload   data/a (1.2 KiB)",
// "skip     data/link: a symlink ...", "would delete data/b".
func changeLine(ch syncer.Change) string {
	verb := string(ch.Action)
	if ch.DryRun {
		verb = "would " + verb
	}
	line := fmt.Sprintf("%-8s %s", verb, shown(ch.Path))
	if ch.Bytes > 0 && ch.Action != syncer.ActionDelete && ch.Action != syncer.ActionRemove {
		line += " (" + size(ch.Bytes) + ")"
	}
	if ch.Reason != "" {
		line += ": " + ch.Reason
	}
	return line
}
