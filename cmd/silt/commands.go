package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runFunc runs a command once cobra has parsed its flags and counted its
// arguments.
type runFunc func(ctx context.Context, args []string) error

// command is one subcommand: the one definition its help, flags,
// completion, man page and CLI reference come from.
type command struct {
	name    string
	args    string // positional arguments, for the usage line
	summary string
	example string
	// minArgs and maxArgs bound the positional arguments (maxArgs < 0:
	// unbounded).
	minArgs, maxArgs int
	// setup declares the command's own flags on fs and returns its run,
	// which reads them.
	setup func(c *cli, fs *pflag.FlagSet) runFunc
	// complete completes the positional arguments (nil: file names).
	complete func(args []string, toComplete string) ([]string, cobra.ShellCompDirective)
}

// commands is the command table, in the order help lists it. A file that
// adds a command appends to it in its own init (see serve.go).
var commands []*command

func init() {
	commands = []*command{
		initCmd, pullCmd, pushCmd, syncCmd, statusCmd, resolveCmd, hydrateCmd,
		verifyCmd, lockCmd, lsCmd, catCmd, logCmd, checkCmd, exportCmd, gcCmd, conformanceCmd, demoCmd, versionCmd,
	}
}

func lookup(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

// newRoot builds the command tree for one invocation c: every command of
// the table with its flags bound to c, the global flags, help, and
// cobra's completion command.
func newRoot(c *cli) *cobra.Command {
	cobra.EnableCommandSorting = false // help lists the table's order
	root := &cobra.Command{
		Use:   "silt",
		Short: "keep a local cache directory in sync with an object store",
		Long: "silt keeps a local cache directory in sync with an object store (S3, GCS, a directory, or any gocloud bucket), " +
			"through a sharded index committed by compare-and-swap.\n\n" + globalNotes,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true, // the checked-in reference must not change by date
	}
	pf := root.PersistentFlags()
	pf.BoolVar(&c.json, "json", false, "print exactly one JSON object on stdout")
	pf.BoolVarP(&c.verbose, "verbose", "v", false, "verbose: one line per file uploaded, downloaded, deleted, removed, skipped or in conflict, on stderr")
	storeFlags(pf, c)
	waitFlag(pf, c)
	c.logFlags(pf)
	c.traceFlag(pf)
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if err := c.setupLog(); err != nil {
			return err
		}
		return c.setupTrace()
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	for _, cmd := range commands {
		root.AddCommand(cobraCommand(c, cmd))
	}
	root.InitDefaultCompletionCmd()
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cc *cobra.Command, args []string) {
		switch cmd := lookup(cc.Name()); {
		case cc == root:
			topUsage(cc.OutOrStdout(), root)
		case cmd != nil && cc.Parent() == root:
			commandHelp(cc.OutOrStdout(), cc, cmd)
		default:
			defaultHelp(cc, args)
		}
	})
	return root
}

func cobraCommand(c *cli, cmd *command) *cobra.Command {
	cc := &cobra.Command{
		Use:     strings.TrimSpace(cmd.name + " [flags] " + cmd.args),
		Short:   cmd.summary,
		Example: indent(cmd.example),
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) < cmd.minArgs:
				return usagef("missing argument: want %s", cmd.args)
			case cmd.maxArgs >= 0 && len(args) > cmd.maxArgs:
				return usagef("too many arguments: %s", strings.Join(args[cmd.maxArgs:], " "))
			}
			return nil
		},
	}
	run := cmd.setup(c, cc.Flags())
	cc.RunE = func(cc *cobra.Command, args []string) error {
		c.ran = true
		return run(cc.Context(), args)
	}
	cc.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if cmd.maxArgs >= 0 && len(args) >= cmd.maxArgs {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if cmd.complete == nil {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return cmd.complete(args, toComplete)
	}
	if f := cc.Flags().Lookup("dir"); f != nil {
		_ = cc.MarkFlagDirname("dir")
	}
	return cc
}

// globalNotes is what every command shares: said once, in the top help
// and the reference.
const globalNotes = "Every command takes --help, --json, -v, --log-level, --trace, --timeout, --profile and --gcs-credentials, " +
	"before or after its arguments (\"--\" ends the flags). Exit codes: 0 success, 1 error, 2 usage, 3 refused (a guard or a conflict), " +
	"130/143 interrupted (SIGINT/SIGTERM).\n" +
	"Inside a cache no --dir is needed: silt finds it upward from the working directory ($SILT_DIR overrides), and paths are taken " +
	"relative to the working directory; commands that read a bucket take its URL ($SILT_REMOTE overrides) or the cache's binding."

func topUsage(w io.Writer, root *cobra.Command) {
	fmt.Fprint(w, "silt keeps a local cache directory in sync with an object store.\n\nUsage:\n  silt <command> [flags] [arguments]\n\nCommands:\n")
	for _, cc := range root.Commands() {
		if cc.IsAvailableCommand() || cc.Name() == "help" {
			fmt.Fprintf(w, "  %-12s %s\n", cc.Name(), cc.Short)
		}
	}
	fmt.Fprint(w, "\n"+globalNotes+"\n\n"+
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
		"  silt push --trace spans.jsonl        # OpenTelemetry spans as JSON lines (or SILT_TRACE=stderr)\n"+
		"  silt push --wait 2m                  # another process holds the cache: wait for it (default: fail at once, naming it)\n"+
		"  source <(silt completion bash)       # completion for bash (also zsh, fish, powershell)\n")
}

// commandHelp is one command's --help: usage line, summary, its flags,
// the global ones, and examples.
func commandHelp(w io.Writer, cc *cobra.Command, cmd *command) {
	fmt.Fprintf(w, "Usage: silt %s [flags] %s\n\n%s\n\nFlags:\n%s", cmd.name, cmd.args, cmd.summary, cc.LocalNonPersistentFlags().FlagUsages())
	fmt.Fprintf(w, "\nGlobal flags:\n%s", cc.InheritedFlags().FlagUsages())
	fmt.Fprintf(w, "\nExample:\n%s\n", indent(cmd.example))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// execute runs args through the command tree and returns the command it
// found (nil if none) and the error. An error that cobra returns without
// running the command (a bad flag, an unknown command, a wrong argument
// count) is a usage error.
func execute(ctx context.Context, c *cli, args []string, stdout, stderr io.Writer) (*command, error) {
	root := newRoot(c)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	found, err := root.ExecuteContextC(ctx)
	var cmd *command
	if found != nil && found.Parent() == root {
		cmd = lookup(found.Name())
	}
	if err != nil && !c.ran {
		var ue *usageError
		if !errors.As(err, &ue) {
			err = usagef("%v", err)
		}
		if !c.json && wantsJSON(args) {
			c.json = true // a bad flag before --json: still one JSON object
		}
	}
	return cmd, err
}

// wantsJSON tells whether a command line asks for --json before any "--".
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true":
			return true
		}
	}
	return false
}
