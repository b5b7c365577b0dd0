package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitRefused = 3
)

// command is one subcommand: its flags are declared by run on the FlagSet
// that newFlags gives it.
type command struct {
	name    string
	args    string // positional arguments, for the usage line
	summary string
	example string
	run     func(ctx context.Context, c *cli, args []string) error
}

var commands []*command

func init() {
	commands = []*command{
		initCmd, pullCmd, pushCmd, syncCmd, statusCmd, resolveCmd, hydrateCmd,
		verifyCmd, lockCmd, lsCmd, catCmd, logCmd, checkCmd, exportCmd, gcCmd, conformanceCmd, demoCmd, versionCmd,
	}
}

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
		topUsage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			if cmd := lookup(args[1]); cmd != nil {
				return run(ctx, []string{cmd.name, "--help"}, stdout, stderr)
			}
		}
		topUsage(stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "silt: unknown command %q\n", name)
		topUsage(stderr)
		return exitUsage
	}
	c.cmd = cmd
	err := cmd.run(withLogger(withCLI(ctx, c), &c.logger), c, args[1:])
	if terr := c.closeTrace(); err == nil {
		err = terr
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if sc := (*signalCause)(nil); err != nil && errors.As(context.Cause(ctx), &sc) {
		c.signal = sc
	}
	if err == nil && c.json {
		err = c.flushJSON(nil)
	}
	return c.fail(err)
}

func lookup(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

func topUsage(w io.Writer) {
	fmt.Fprint(w, "silt keeps a local cache directory in sync with an object store.\n\nUsage:\n  silt <command> [flags] [arguments]\n\nCommands:\n")
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, "\nEvery command takes --help, --json, -v, --log-level, --trace, --timeout, --profile and --gcs-credentials. Exit codes: 0 success, 1 error, 2 usage, 3 refused (a guard or a conflict), 130/143 interrupted (SIGINT/SIGTERM).\n"+
		"Inside a cache no --dir is needed: silt finds it upward from the working directory ($SILT_DIR overrides); commands that read a bucket take its URL ($SILT_REMOTE overrides).\n\n"+
		"Examples:\n"+
		"  silt demo\n"+
		"  silt push -v                         # one line per file on stderr\n"+
		"  silt push --dry-run                  # every change it would make\n"+
		"  silt pull --json --json-changes 100  # at most 100 entries in changes\n"+
		"  silt resolve --keep-local PATH       # or --take-remote, --all\n"+
		"  silt pull --lazy '**/*.bin'          # then: silt hydrate DIR\n"+
		"  silt push --lock deploy              # commit under a distributed lock\n"+
		"  silt sync --log-level debug --log-format json\n"+
		"  SILT_REMOTE=s3://my-bucket silt ls data/\n"+
		"  silt init --push-existing s3://my-bucket  # a directory with files: push them (or --adopt them)\n"+
		"  silt ls --profile work s3://my-bucket     # an AWS shared profile (or ?profile=work, $AWS_PROFILE)\n"+
		"  silt ls --gcs-credentials key.json gs://my-bucket   # (or ?credentials=FILE, $GOOGLE_APPLICATION_CREDENTIALS)\n"+
		"  silt status -v                       # endpoint, region, credential source, namespace; never a secret\n"+
		"  silt push --trace spans.jsonl        # OpenTelemetry spans as JSON lines (or SILT_TRACE=stderr)\n")
}

// newFlags returns the FlagSet of c's command with the flags every command
// has (--json), and a usage text with an example.
func (c *cli) newFlags() *flag.FlagSet {
	cmd := c.cmd
	fs := flag.NewFlagSet("silt "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.BoolVar(&c.json, "json", false, "print exactly one JSON object on stdout")
	storeFlags(fs, c)
	c.logFlags(fs)
	c.traceFlag(fs)
	fs.BoolVar(&c.verbose, "v", false, "verbose: one line per file uploaded, downloaded, deleted, removed, skipped or in conflict, on stderr")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: silt %s [flags] %s\n\n%s\n\nFlags:\n", cmd.name, cmd.args, cmd.summary)
		fs.PrintDefaults()
		fmt.Fprintf(w, "\nExample:\n%s\n", indent(cmd.example))
	}
	return fs
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// parse parses args, flags and arguments in any order (as rclone users
// expect; "--" ends the flags), and checks the number of positional
// arguments is within [min, max] (max < 0: unbounded). --help prints the
// usage on stdout and returns flag.ErrHelp.
func (c *cli) parse(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	var pos []string
	for {
		fs.SetOutput(io.Discard)
		err := fs.Parse(args)
		fs.SetOutput(c.stderr)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(c.stdout)
			fs.Usage()
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if err := c.setupLog(); err != nil {
		return nil, err
	}
	if err := c.setupTrace(); err != nil {
		return nil, err
	}
	switch {
	case len(pos) < min:
		return nil, usagef("missing argument: want %s", c.cmd.args)
	case max >= 0 && len(pos) > max:
		return nil, usagef("too many arguments: %s", strings.Join(pos[max:], " "))
	}
	return pos, nil
}

var versionCmd = &command{
	name:    "version",
	summary: "print the version of silt",
	example: "silt version",
	run: func(ctx context.Context, c *cli, args []string) error {
		fs := c.newFlags()
		if _, err := c.parse(fs, args, 0, 0); err != nil {
			return err
		}
		v := map[string]any{"version": "(devel)", "go": "", "backends": schemes()}
		if bi, ok := debug.ReadBuildInfo(); ok {
			v["version"] = bi.Main.Version
			v["go"] = bi.GoVersion
		}
		if c.json {
			return c.printJSON(v)
		}
		c.printf("silt %s (%s; stores: %s)\n", v["version"], v["go"], strings.Join(schemes(), ", "))
		return nil
	},
}

func schemes() []string {
	s := backendSchemes()
	sort.Strings(s)
	return s
}
