package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/siltsync/silt/syncer"
)

// minProgressFiles is the smallest transfer that gets a progress bar; a
// bar for two files is noise.
const minProgressFiles = 5

// progress returns a syncer progress callback that draws a bar on stderr,
// or nil when stderr is not a terminal (scripts and CI get results only).
func (c *cli) progress() func(syncer.Progress) {
	if !isTerminal(c.stderr) {
		return nil
	}
	return progressBar(c.stderr)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressBar draws "push [=====>    ]  12/40 files  1.2 MiB" in place, and
// ends the line when the last file is done.
func progressBar(w io.Writer) func(syncer.Progress) {
	var bytes int64
	return func(p syncer.Progress) {
		if p.Total < minProgressFiles {
			return
		}
		bytes += p.Bytes
		const width = 30
		fill := width * p.Done / p.Total
		bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
		if fill > 0 && fill < width {
			bar = bar[:fill-1] + ">" + bar[fill:]
		}
		fmt.Fprintf(w, "\r%-4s [%s] %*d/%d files  %-10s", p.Op, bar, len(fmt.Sprint(p.Total)), p.Done, p.Total, size(bytes))
		if p.Done == p.Total {
			fmt.Fprintln(w)
			bytes = 0
		}
	}
}
