// Command silt-peers measures silt side by side with rclone and the AWS
// CLI against versitygw on 127.0.0.1, behind a proxy that counts requests
// per S3 operation and adds a fixed delay to each (package bench/peers).
//
//	go run ./bench/peers/cmd/silt-peers -sizes 1k,10k,100k -runs 3,3,1 -out bench/results/peers
//	go run ./bench/peers/cmd/silt-peers -sizes 1k -runs 1 -tools silt -strict   # the CI smoke
//	go run ./bench/peers/cmd/silt-peers -merge a/peers.json,b/peers.json -out all  # one report of several runs
//	go run ./bench/peers/cmd/silt-peers -sizes 100k -runs 1 -tools silt -rows noop-push -pprof /tmp/prof
//	go tool pprof -top /tmp/prof/noop-push-100001-run1.cpu.pprof
//
// It writes peers.json (every sample and the aggregates), peers.md (the
// tables) and requests.svg and time.svg (the plots) into -out, and prints
// the tables. Tools missing from PATH are named and their rows left out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/siltsync/silt/bench/peers"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "silt-peers:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		sizes    = flag.String("sizes", "1k,10k", "namespace sizes in files, comma-separated (rounded up to whole models of 11 files)")
		runs     = flag.String("runs", "3", "runs per row: one number, or one per size")
		tools    = flag.String("tools", "silt,rclone,aws", "tools to compare")
		rows     = flag.String("rows", "", "run only rows whose name matches this regular expression")
		latency  = flag.Duration("latency", 10*time.Millisecond, "delay the proxy adds to every measured request")
		large    = flag.String("latency-large", "", "delay at sizes above -full-rows-up-to (default: -latency)")
		fullUpTo = flag.Int("full-rows-up-to", 10_010, "largest size at which every row runs; larger sizes run the no-op push only")
		dir      = flag.String("dir", "", "scratch directory (default: the system temp directory)")
		repo     = flag.String("repo", ".", "root of the silt repository (silt is built from it)")
		out      = flag.String("out", "", "directory for peers.json, peers.md, requests.svg and time.svg")
		timeout  = flag.Duration("timeout", 30*time.Minute, "bound on every command the runner starts")
		silt     = flag.String("silt", "", "silt binary (default: go build ./cmd/silt)")
		vgw      = flag.String("versitygw", "", "versitygw binary (default: .ci/bin/versitygw, PATH, or go install "+peers.VersitygwVersion+")")
		rclone   = flag.String("rclone", "", "rclone binary (default: PATH)")
		awsCLI   = flag.String("aws", "", "AWS CLI (default: PATH)")
		quiet    = flag.Bool("q", false, "no progress on stderr")
		encrypt  = flag.Bool("encrypt", false, "run silt on encrypted buckets (init --encrypt, SILT_PASSWORD)")
		merge    = flag.String("merge", "", "instead of running, merge these peers.json files (comma-separated) into one report")
		pprofDir = flag.String("pprof", "", "directory: every measured silt run writes a CPU and an allocation profile there ({row}-{files}-run{n}.cpu.pprof, .mem.pprof)")
		strict   = flag.Bool("strict", false, "fail when silt's own counts differ from the proxy's, or a pull missed a change (the CI smoke)")
	)
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *merge != "" {
		rep, err := peers.Merge(splitList(*merge)...)
		if err != nil {
			return err
		}
		if err := rep.WriteMarkdown(os.Stdout); err != nil {
			return err
		}
		if *out != "" {
			return writeOut(rep, *out)
		}
		return nil
	}
	cfg := peers.Config{Latency: *latency, FullRowsUpTo: *fullUpTo, Dir: *dir, Repo: *repo, Timeout: *timeout,
		Silt: *silt, Encrypt: *encrypt, Versitygw: *vgw, Rclone: *rclone, AWS: *awsCLI, Tools: splitList(*tools), PprofDir: *pprofDir}
	var err error
	if cfg.Sizes, err = parseSizes(*sizes); err != nil {
		return err
	}
	for _, f := range splitList(*runs) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("-runs: %q is not a number", f)
		}
		cfg.Runs = append(cfg.Runs, n)
	}
	if *rows != "" {
		if cfg.Rows, err = regexp.Compile(*rows); err != nil {
			return fmt.Errorf("-rows: %w", err)
		}
	}
	if *large != "" {
		d, err := time.ParseDuration(*large)
		if err != nil {
			return fmt.Errorf("-latency-large: %w", err)
		}
		cfg.LatencyLarge = &d
	}
	if !*quiet {
		cfg.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := peers.Run(ctx, cfg)
	if rep == nil {
		return runErr
	}
	if runErr != nil {
		// Keep what was measured before the failure.
		rep.Results = peers.Aggregate(rep.Samples)
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(os.Stderr, "missing tools (rows left out): %s\n", strings.Join(rep.Missing, ", "))
	}
	if err := rep.WriteMarkdown(os.Stdout); err != nil {
		return errors.Join(runErr, err)
	}
	if *out != "" {
		if err := writeOut(rep, *out); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if runErr == nil && *strict {
		if p := rep.Problems(); len(p) > 0 {
			return fmt.Errorf("-strict: %d problems:\n  %s", len(p), strings.Join(p, "\n  "))
		}
	}
	return runErr
}

// writeOut writes the report's files into dir.
func writeOut(rep *peers.Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fn func(f *os.File) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return errors.Join(
		write("peers.json", func(f *os.File) error { return rep.WriteJSON(f) }),
		write("peers.md", func(f *os.File) error { return rep.WriteMarkdown(f) }),
		write("requests.svg", func(f *os.File) error { return rep.WritePlot(f, peers.PlotRequests) }),
		write("time.svg", func(f *os.File) error { return rep.WritePlot(f, peers.PlotTime) }),
	)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseSizes reads "1000,10000" or "1k,10k".
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(strings.ToLower(s)) {
		mult := 1
		if strings.HasSuffix(f, "k") {
			f, mult = strings.TrimSuffix(f, "k"), 1000
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-sizes: bad size %q", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}
