package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/siltsync/silt/bench/peers/proxy"
)

// ErrBadConfig is returned when a [Config] cannot be run: an unknown tool
// or sizes and runs that do not match.
var ErrBadConfig = errors.New("peers: bad config")

// Config says what [Run] measures.
type Config struct {
	// Sizes are the namespace sizes, in files (rounded up to whole models,
	// see [NewTree]).
	Sizes []int
	// Runs is the number of runs per row at each size, one per entry of
	// Sizes; a single entry applies to every size.
	Runs []int
	// Tools are the tools to compare, of ToolSilt, ToolRclone, ToolAWS.
	// A tool not found on PATH is left out and named in Report.Missing.
	Tools []string
	// Rows, when set, keeps only the rows whose name it matches.
	Rows *regexp.Regexp
	// FullRowsUpTo is the largest size at which every row runs; larger
	// sizes run only the no-op push (a cold transfer of 100k files per
	// run and tool would take most of an hour). 0 means 10,010.
	FullRowsUpTo int
	// Latency is the delay the proxy adds to every measured request.
	// Preparation (seeding, a peer's change) is never delayed.
	Latency time.Duration
	// LatencyLarge, when set, replaces Latency at sizes above
	// FullRowsUpTo.
	LatencyLarge *time.Duration
	// Dir is the scratch directory; "" makes one under os.TempDir. The
	// runner removes what it made there.
	Dir string
	// Repo is the root of the silt repository: where silt is built from
	// and .ci/bin/versitygw is looked for. "" is the current directory.
	Repo string
	// Encrypt runs silt on encrypted buckets (init --encrypt, the
	// passphrase in SILT_PASSWORD), to set its times beside the plain ones.
	Encrypt bool
	// Silt, Versitygw, Rclone and AWS override where each program is
	// found.
	Silt, Versitygw, Rclone, AWS string
	// Timeout bounds every command the runner starts. 0 means 30 minutes.
	Timeout time.Duration
	// PprofDir, when set, makes every measured silt run write a CPU
	// profile and an allocation profile there, named
	// {row}-{files}-run{n}.cpu.pprof and .mem.pprof (through silt's
	// SILT_CPUPROFILE and SILT_MEMPROFILE). Profiling costs those runs a
	// little time: compare unprofiled runs.
	PprofDir string
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

func (c Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

func (c Config) runsAt(i int) int {
	if len(c.Runs) == 1 {
		return c.Runs[0]
	}
	return c.Runs[i]
}

func (c *Config) check() error {
	if len(c.Sizes) == 0 {
		return fmt.Errorf("%w: no sizes", ErrBadConfig)
	}
	if len(c.Runs) != 1 && len(c.Runs) != len(c.Sizes) {
		return fmt.Errorf("%w: %d run counts for %d sizes", ErrBadConfig, len(c.Runs), len(c.Sizes))
	}
	for _, r := range c.Runs {
		if r < 1 {
			return fmt.Errorf("%w: runs %d", ErrBadConfig, r)
		}
	}
	for _, t := range c.Tools {
		switch t {
		case ToolSilt, ToolRclone, ToolAWS:
		default:
			return fmt.Errorf("%w: unknown tool %q", ErrBadConfig, t)
		}
	}
	if c.FullRowsUpTo == 0 {
		c.FullRowsUpTo = 10_010
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Minute
	}
	return nil
}

// runner is one Run in progress.
type runner struct {
	cfg     Config
	scratch string
	srv     *server
	tools   []*tool
	report  *Report
	// shared is the plain-object remote of the current size that the
	// tools without state of their own read, when only the no-op push
	// runs (it changes nothing remotely); nil until seeded.
	shared *copyOf
}

// Run starts versitygw and the proxy on 127.0.0.1, generates the trees,
// and measures every row at every size for every tool found, interleaving
// the tools run by run, each on its own copy of the tree. It stops
// everything it started before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	repo, err := filepath.Abs(cfg.Repo)
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(cfg.Dir, "silt-peers-")
	if err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	defer os.RemoveAll(scratch)
	r := &runner{cfg: cfg, scratch: scratch, report: newReport(cfg)}
	if cfg.PprofDir != "" {
		if r.cfg.PprofDir, err = filepath.Abs(cfg.PprofDir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(r.cfg.PprofDir, 0o755); err != nil {
			return nil, fmt.Errorf("peers: %w", err)
		}
	}

	vgw, err := findVersitygw(ctx, cfg.Versitygw, repo, cfg.logf)
	if err != nil {
		return nil, err
	}
	r.srv, err = startServer(ctx, vgw, filepath.Join(scratch, "server"))
	if err != nil {
		return nil, err
	}
	defer r.srv.stop()
	if err := r.findTools(ctx, repo); err != nil {
		return nil, err
	}
	if len(r.tools) == 0 {
		return nil, fmt.Errorf("%w: none of the tools %v was found", ErrBadConfig, cfg.Tools)
	}
	for i, n := range cfg.Sizes {
		if err := r.runSize(ctx, NewTree(n), cfg.runsAt(i)); err != nil {
			return r.report, err
		}
	}
	r.report.finish()
	return r.report, nil
}

// findTools builds silt and looks the peers up, recording what it found
// and what is missing.
func (r *runner) findTools(ctx context.Context, repo string) error {
	ep := r.srv.ep
	for _, name := range r.cfg.Tools {
		var t *tool
		switch name {
		case ToolSilt:
			path := r.cfg.Silt
			if path == "" {
				path = filepath.Join(r.scratch, "bin", "silt")
				r.cfg.logf("building silt (go build ./cmd/silt)")
				cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/silt")
				cmd.Dir = repo
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("peers: build silt: %w: %s", err, out)
				}
			}
			t = newSilt(path, ep, r.cfg.Encrypt)
		case ToolRclone, ToolAWS:
			path := r.cfg.Rclone
			if name == ToolAWS {
				path = r.cfg.AWS
			}
			if path == "" {
				p, err := findTool(ctx, name)
				if err != nil {
					r.report.Missing = append(r.report.Missing, name)
					r.cfg.logf("%s not found on PATH: its rows are left out", name)
					continue
				}
				path = p
			}
			if name == ToolRclone {
				t = newRclone(path, r.scratch, ep)
			} else {
				var err error
				if t, err = newAWS(path, r.scratch, ep); err != nil {
					return err
				}
			}
		}
		t.version = toolVersion(ctx, t)
		r.report.Tools = append(r.report.Tools, ToolInfo{Name: t.name, Path: t.path, Version: t.version})
		r.tools = append(r.tools, t)
	}
	return nil
}

// state is one tool's copies of one tree.
type state struct {
	t      *tool
	tree   Tree
	main   copyOf // in sync with the remote
	peer   copyOf // another machine on the same remote
	gen    int    // last generation written by a change
	scrDir string
}

// runSize measures every row at one size.
func (r *runner) runSize(ctx context.Context, tree Tree, runs int) error {
	full := tree.Files() <= r.cfg.FullRowsUpTo
	latency := r.cfg.Latency
	if !full && r.cfg.LatencyLarge != nil {
		latency = *r.cfg.LatencyLarge
	}
	var rs []row
	for _, rw := range rows {
		if (full || rw.large) && (r.cfg.Rows == nil || r.cfg.Rows.MatchString(rw.name)) {
			rs = append(rs, rw)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	var states []*state
	for _, t := range r.tools {
		st, err := r.prepare(ctx, t, tree, full)
		if err != nil {
			return err
		}
		states = append(states, st)
	}
	for _, rw := range rs {
		r.cfg.logf("%d files: %s, %d runs", tree.Files(), rw.name, runs)
		for run := range runs {
			// The tools take turns, starting with a different one each
			// run, so none always runs first (or after the same one).
			for k := range states {
				st := states[(k+run)%len(states)]
				samples, err := rw.do(ctx, r, st, run, latency)
				if err != nil {
					return fmt.Errorf("peers: %s at %d files, %s run %d: %w", rw.name, tree.Files(), st.t.name, run+1, err)
				}
				for _, s := range samples {
					r.cfg.logf("  %-16s %-6s run %d: %8.0f ms, %6d requests, cpu %6.0f ms, rss %4d MiB%s",
						s.Row, s.Tool, run+1, s.WallMs, s.Requests.Total(), s.CPUMs, s.MaxRSSKiB>>10, noteSuffix(s.Note))
					r.report.Samples = append(r.report.Samples, s)
				}
			}
		}
	}
	for _, st := range states {
		os.RemoveAll(st.scrDir)
		r.srv.removePrefix(st.main.bucket, st.main.prefix)
	}
	r.shared = nil
	return nil
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// prepare gives tool t a main copy of tree in sync with its remote, and,
// when every row runs (full), a peer copy of the same remote. Nothing here
// is measured.
func (r *runner) prepare(ctx context.Context, t *tool, tree Tree, full bool) (*state, error) {
	start := time.Now()
	st := &state{t: t, tree: tree, scrDir: filepath.Join(r.scratch, t.name, strconv.Itoa(tree.Files()))}
	bucket := "peers-" + t.name
	if err := r.srv.makeBucket(bucket); err != nil {
		return nil, err
	}
	prefix := "n" + strconv.Itoa(tree.Files())
	st.main = copyOf{dir: filepath.Join(st.scrDir, "main"), bucket: bucket, prefix: prefix + "/main"}
	st.peer = copyOf{dir: filepath.Join(st.scrDir, "peer"), bucket: bucket, prefix: prefix + "/main"}
	if err := tree.Write(st.main.dir, oldTime()); err != nil {
		return nil, err
	}
	r.srv.proxy.SetDelay(0)
	switch {
	case t.bind == nil && !full && r.shared != nil:
		// Seeding 100k objects again would only cost time: each tool
		// still walks its own local copy.
		st.main.bucket, st.main.prefix = r.shared.bucket, r.shared.prefix
	case t.bind == nil:
		if err := seedObjects(ctx, r.srv.ep, st.main, tree); err != nil {
			return nil, err
		}
		if !full {
			shared := st.main
			r.shared = &shared
			break
		}
		if err := tree.Write(st.peer.dir, oldTime()); err != nil {
			return nil, err
		}
	default:
		cmds := []command{t.bind(st.main), t.push(st.main, true)}
		if full {
			cmds = append(cmds, t.bind(st.peer), t.pull(st.peer, "", true))
		}
		for _, c := range cmds {
			if _, _, err := c.run(ctx, r.cfg.Timeout); err != nil {
				return nil, fmt.Errorf("peers: prepare %s at %d files: %w", t.name, tree.Files(), err)
			}
		}
	}
	r.cfg.logf("prepared %s: %d files in %v", t.name, tree.Files(), time.Since(start).Round(time.Millisecond))
	return st, nil
}

// oldTime is the modification time of generated files: well outside any
// tool's window for "modified just now".
func oldTime() time.Time { return time.Now().Add(-time.Hour).Truncate(time.Second) }

// The environment variables with which the silt CLI writes profiles of
// one run (cmd/silt/pprof.go).
const (
	envCPUProfile = "SILT_CPUPROFILE"
	envMemProfile = "SILT_MEMPROFILE"
)

// measure runs c with the proxy's delay set to latency and returns what
// it cost and the requests the proxy saw. Unless the command failed, the
// delay is 0 again afterwards.
func (r *runner) measure(ctx context.Context, st *state, rowName string, run int, latency time.Duration, c command) (Sample, error) {
	if r.cfg.PprofDir != "" && st.t.name == ToolSilt {
		base := filepath.Join(r.cfg.PprofDir, fmt.Sprintf("%s-%d-run%d", rowName, st.tree.Files(), run+1))
		c.env = append(slices.Clip(c.env), envCPUProfile+"="+base+".cpu.pprof", envMemProfile+"="+base+".mem.pprof")
		r.cfg.logf("  profiles: %s.{cpu,mem}.pprof", base)
	}
	p := r.srv.proxy
	p.Reset()
	p.SetDelay(latency)
	out, u, err := c.run(ctx, r.cfg.Timeout)
	p.SetDelay(0)
	s := Sample{Row: rowName, Tool: st.t.name, Files: st.tree.Files(), Run: run + 1, LatencyMs: ms(latency), Usage: u, Requests: p.Snapshot()}
	if err != nil {
		return s, err
	}
	if st.t.selfCounts {
		var self struct {
			Requests struct{ Get, Put, List, Delete, Stat int64 } `json:"requests"`
		}
		if err := json.Unmarshal(out, &self); err != nil {
			return s, fmt.Errorf("read %s --json: %w", st.t.name, err)
		}
		q := self.Requests
		s.Self = &SelfCounts{Get: q.Get, Put: q.Put, List: q.List, Delete: q.Delete, Stat: q.Stat}
		s.SelfMatches = s.Self.matches(s.Requests)
		if !s.SelfMatches {
			s.Note = "own counts differ from the proxy's"
		}
	}
	return s, nil
}

// SelfCounts are the requests silt reported itself (--json), per verb.
type SelfCounts struct {
	Get    int64 `json:"get"`
	Put    int64 `json:"put"`
	List   int64 `json:"list"`
	Delete int64 `json:"delete"`
	Stat   int64 `json:"stat"`
}

// matches reports whether silt's own counts are the proxy's, verb by
// operation.
func (c SelfCounts) matches(p proxy.Counts) bool {
	o := p.Ops
	put := o[proxy.OpPutObject] + o[proxy.OpCreateMultipartUpload] + o[proxy.OpUploadPart] + o[proxy.OpCompleteMultipartUpload]
	return c.Get == o[proxy.OpGetObject] && c.Put == put && c.List == o[proxy.OpListObjectsV2] &&
		c.Delete == o[proxy.OpDeleteObject] && c.Stat == o[proxy.OpHeadObject] &&
		c.Get+c.Put+c.List+c.Delete+c.Stat == p.Total()
}

// machine describes where the run happened.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryMiB = kb >> 10
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Sscanf(string(data), "%f", &m.LoadAvg)
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = string(trimNL(out))
	}
	return m
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
