package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/siltsync/silt/syncer"
)

// minProgressFiles is the smallest transfer that gets a progress line; a
// line for two files is noise.
const minProgressFiles = 5

// redrawEvery bounds redraws to 10 a second, like rclone's -P: a terminal
// that scrolls thousands of frames costs more than the transfer.
const redrawEvery = 100 * time.Millisecond

// progress returns a syncer progress callback that draws a status line on
// stderr, or nil when stderr is not a terminal (scripts and CI get results
// only).
func (c *cli) progress() func(syncer.Progress) {
	if !isTerminal(c.stderr) {
		return nil
	}
	c.meter = newMeter(c.stderr, time.Now)
	return c.meter.update
}

// isTerminal tells a terminal from a file, a pipe or a character device
// such as /dev/null (which a mode check takes for a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// meter draws one status line in place:
//
//	push  checking: 1234 files compared
//	push  12/40 files  1.2 MiB / 5.0 MiB  3.4 MiB/s  ETA 1s
//
// at most every redrawEvery, the last frame of a transfer always, which
// ends the line.
type meter struct {
	w   io.Writer
	now func() time.Time

	mu      sync.Mutex
	began   time.Time // first event of the operation
	started time.Time // first transfer of the operation
	drawn   time.Time // last frame
	onLine  bool      // a frame is on the screen, not ended
}

func newMeter(w io.Writer, now func() time.Time) *meter { return &meter{w: w, now: now} }

func (m *meter) update(p syncer.Progress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.began.IsZero() {
		m.began = now
	}
	last := p.Phase != "check" && p.Done == p.Total
	if p.Phase != "check" {
		if p.Total < minProgressFiles {
			return
		}
		if m.started.IsZero() {
			m.started = now
		}
	}
	if !last && (now.Sub(m.drawn) < redrawEvery || now.Sub(m.began) < redrawEvery) {
		return // throttled, or too early: a fast operation draws nothing
	}
	m.drawn = now
	fmt.Fprintf(m.w, "\r%s\033[K", m.frame(p, now))
	m.onLine = true
	if last {
		fmt.Fprintln(m.w)
		m.onLine, m.began, m.started = false, time.Time{}, time.Time{}
	}
}

// frame is the text of one status line.
func (m *meter) frame(p syncer.Progress, now time.Time) string {
	if p.Phase == "check" {
		return fmt.Sprintf("%-4s  checking: %s compared", p.Op, count(p.Checked, "file"))
	}
	s := fmt.Sprintf("%-4s  %*d/%d files  %s / %s", p.Op, len(fmt.Sprint(p.Total)), p.Done, p.Total, size(p.DoneBytes), size(p.TotalBytes))
	elapsed := now.Sub(m.started).Seconds()
	if elapsed <= 0 || p.DoneBytes == 0 {
		return s + "  -/s  ETA -"
	}
	rate := float64(p.DoneBytes) / elapsed
	eta := time.Duration(float64(max(p.TotalBytes-p.DoneBytes, 0)) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%s  %s/s  ETA %v", s, size(int64(rate)), eta)
}

// clear removes an unfinished frame, so that the next line starts clean.
func (m *meter) clear() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.onLine {
		fmt.Fprint(m.w, "\r\033[K")
		m.onLine = false
	}
}
