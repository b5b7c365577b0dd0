// Command silt-bench runs silt's benchmark scenarios (package bench) and
// prints, per scenario and namespace size, the requests per verb one
// operation sends and its wall time over the trials.
//
//	go run ./bench/cmd/silt-bench -backend mem -latency 10ms -scale 1000,100000 -trials 5
//	go run ./bench/cmd/silt-bench -backend fs,mem -json > results.json
//	go run ./bench/cmd/silt-bench -backend fs -json-file fs.json  # table and JSON
//
// -json prints the reference benchmark's shape ({name, phases[{phase, min,
// avg, max, trials}], wallMin/Avg/Max, trials} plus requests{get, put,
// condput, list, delete, stat}) instead of the table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/siltsync/silt/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "silt-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		backends    = flag.String("backend", "mem", "bucket kind: mem, fs, or both comma-separated")
		latency     = flag.Duration("latency", 10*time.Millisecond, "delay added to every request of the measured operation")
		scale       = flag.String("scale", "1000,100000", "namespace sizes of the scaled scenarios (1k and 100k work too)")
		trials      = flag.Int("trials", 5, "trials per scenario and size")
		asJSON      = flag.Bool("json", false, "print JSON instead of a table")
		jsonFile    = flag.String("json-file", "", "also write the JSON to this file")
		match       = flag.String("run", "", "run only scenarios whose name matches this regular expression")
		dir         = flag.String("dir", "", "scratch directory (default: the system temp directory)")
		concurrency = flag.Int("concurrency", 0, "syncer Concurrency of the measured caches (0: the syncer's default)")
		list        = flag.Bool("list", false, "list the scenarios and exit")
		verbose     = flag.Bool("v", false, "report progress on stderr")
	)
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *list {
		for _, sc := range bench.Scenarios() {
			size := "scaled"
			if !sc.Scaled {
				size = strconv.Itoa(sc.Entries)
			}
			fmt.Printf("%-24s %-7s %s\n", sc.Name, size, sc.Desc)
		}
		return nil
	}
	sizes, err := parseSizes(*scale)
	if err != nil {
		return err
	}
	var re *regexp.Regexp
	if *match != "" {
		if re, err = regexp.Compile(*match); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var results []bench.Result
	for _, be := range strings.Split(*backends, ",") {
		env := bench.Env{Backend: strings.TrimSpace(be), Latency: *latency, Dir: *dir, Concurrency: *concurrency}
		if *verbose {
			env.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "  "+format+"\n", args...) }
		}
		for _, sc := range bench.Scenarios() {
			if re != nil && !re.MatchString(sc.Name) {
				continue
			}
			ns := sizes
			if !sc.Scaled {
				ns = []int{sc.Entries}
			}
			for _, n := range ns {
				if *verbose {
					fmt.Fprintf(os.Stderr, "%s %s at %d entries, %d trials...\n", env.Backend, sc.Name, n, *trials)
				}
				r, err := bench.Run(ctx, sc, env, n, *trials)
				if err != nil {
					return err
				}
				if *verbose {
					fmt.Fprintf(os.Stderr, "  setup %.0f ms, wall avg %.1f ms, %d requests\n", r.SetupMs, r.WallAvg, r.Requests.Total)
				}
				results = append(results, r)
			}
		}
	}
	if *jsonFile != "" {
		f, err := os.Create(*jsonFile)
		if err != nil {
			return err
		}
		if err := bench.WriteJSON(f, results); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *asJSON {
		return bench.WriteJSON(os.Stdout, results)
	}
	// One table per backend, so the columns compare like with like.
	for i := 0; i < len(results); {
		j := i
		for j < len(results) && results[j].Backend == results[i].Backend {
			j++
		}
		fmt.Printf("backend %s, latency %v per request, %d trials\n", results[i].Backend, *latency, *trials)
		if err := bench.WriteTable(os.Stdout, results[i:j]); err != nil {
			return err
		}
		fmt.Println()
		i = j
	}
	return nil
}

// parseSizes reads "1000,100000" or "1k,100k".
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		mult := 1
		if strings.HasSuffix(f, "k") {
			f, mult = strings.TrimSuffix(f, "k"), 1000
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-scale: bad size %q", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}
