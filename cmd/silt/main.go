package main

import (
	"context"
	"errors"

	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitRefused = 3
)

// Exit codes of a run cut short by a signal: 128 + its number, as shells
// report it.
const (
	exitSIGINT  = 130
	exitSIGTERM = 143
)

// signalCause is the cause of the context of a run cut short by a signal.
type signalCause struct {
	name string
	code int
}

func (s *signalCause) Error() string { return s.name }

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, more := <-sigs
		if !more {
			return
		}
		cause := &signalCause{"SIGINT", exitSIGINT}
		if sig == syscall.SIGTERM {
			cause = &signalCause{"SIGTERM", exitSIGTERM}
		}
		signal.Stop(sigs) // a second signal kills at once, as users expect
		cancel(cause)
	}()
	stopProfiles, err := startProfiles()
	if err != nil {
		fmt.Fprintf(os.Stderr, "silt: %v\n", err)
		os.Exit(exitError)
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfiles()
	signal.Stop(sigs)
	cancel(nil)
	os.Exit(code)
}

// run executes one command line and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, jsonChanges: defaultJSONChanges}
	if len(args) == 0 {
		topUsage(stderr, newRoot(c))
		return exitUsage
	}
	if args[0] == "-version" || args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, err := execute(withLogger(withCLI(ctx, c), &c.logger), c, args, stdout, stderr)
	c.cmd = cmd
	if terr := c.closeTrace(); err == nil {
		err = terr
	}
	if sc := (*signalCause)(nil); err != nil && errors.As(context.Cause(ctx), &sc) {
		c.signal = sc
	}
	if err == nil && c.json {
		err = c.flushJSON(nil)
	}
	return c.fail(err)
}

func schemes() []string {
	s := backendSchemes()
	sort.Strings(s)
	return s
}
