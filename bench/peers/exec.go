package peers

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Usage is what one child process cost, from its rusage: the client side
// of a measurement.
type Usage struct {
	// WallMs is the time from start to exit, in milliseconds.
	WallMs float64 `json:"wallMs"`
	// CPUMs is user plus system CPU time, in milliseconds, of the child
	// and of any children it waited for.
	CPUMs float64 `json:"cpuMs"`
	// MaxRSSKiB is the peak resident set size, in KiB.
	MaxRSSKiB int64 `json:"maxRssKiB"`
}

// command is one child process to run: the tool's argv and environment.
type command struct {
	argv []string
	env  []string
}

// stderrTail is how much of a failed child's stderr an error quotes.
const stderrTail = 2000

// run runs c to completion and returns its stdout and what it cost. A
// non-zero exit is an error quoting the end of its stderr.
func (c command) run(ctx context.Context, timeout time.Duration) ([]byte, Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env = c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	u := Usage{WallMs: ms(time.Since(start))}
	if ps := cmd.ProcessState; ps != nil {
		u.CPUMs, u.MaxRSSKiB = childUsage(ps)
	}
	if err != nil {
		tail := stderr.String()
		if len(tail) > stderrTail {
			tail = "..." + tail[len(tail)-stderrTail:]
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return stdout.Bytes(), u, fmt.Errorf("%s: %w: %s", strings.Join(c.argv, " "), err, strings.TrimSpace(tail))
	}
	return stdout.Bytes(), u, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
