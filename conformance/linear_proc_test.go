package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// Linearizability across processes: 8 writers and 4 readers, each this
// test binary re-executed (TestLinearProcHelper) with a cache directory of
// its own, on one file:// bucket opened as the command line opens it
// (backend.Open, the production layers). Writers push random small edits
// of their own and of shared paths (plain pushes, Paths pushes, and
// PreparePush + CommitPush); readers pull, scoped and unscoped. Every child
// appends each operation's call and return, stamped with CLOCK_MONOTONIC
// (one clock per boot, so stamps of different processes compare), to a
// JSON-lines file; the parent merges them and checks the history with
// porcupine against linModel, the sequential index of linear_test.go. In
// the killed variant one writer is SIGKILLed before a request of a push:
// that operation has no return and may or may not have committed.

const (
	envLinRole = "SILT_LINP_ROLE" // writer or reader; unset: not a child
	envLinID   = "SILT_LINP_ID"
	envLinURL  = "SILT_LINP_URL"
	envLinDir  = "SILT_LINP_DIR"
	envLinLog  = "SILT_LINP_LOG"
	envLinOps  = "SILT_LINP_OPS"
	envLinSeed = "SILT_LINP_SEED"
	// envLinKill is "op:req": SIGKILL the writer before request req of its
	// operation op, its last.
	envLinKill = "SILT_LINP_KILL"

	// linHistoriesEnv sets how many histories the process test records
	// and checks (half of them with a killed writer); 2 by default.
	linHistoriesEnv = "SILT_LINEAR_HISTORIES"
	linProcOps      = 5 // operations per child
)

// linpCall is one operation as a child invokes it.
type linpCall struct {
	Kind string `json:"kind"` // push, paths, twophase, pull
	// Changes is what a push writes: path -> content, "" deletes.
	Changes map[string]string `json:"changes,omitempty"`
	Scope   string            `json:"scope,omitempty"` // a pull's scope; "" is everything
}

// linpReturn is what the operation reported.
type linpReturn struct {
	Seq       uint64            `json:"seq"`
	Committed bool              `json:"committed"`
	Conflicts []string          `json:"conflicts,omitempty"`
	Files     map[string]string `json:"files,omitempty"` // a pull: the scope as the cache holds it after
}

// linpRecord is one line of a child's log: a call (Call set) or a return.
type linpRecord struct {
	Op     int         `json:"op"`
	T      int64       `json:"t"` // CLOCK_MONOTONIC, ns
	Call   *linpCall   `json:"call,omitempty"`
	Return *linpReturn `json:"return,omitempty"`
}

// linpPending is the output of an operation that never returned.
type linpPending struct{}

func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC exists on every Linux
	}
	return ts.Nano()
}

func linpInScope(p, scope string) bool { return inDir(p, scope) }

// linpModel wraps linModel: its state and its pull step, with pushes of
// several paths (conflicted ones left out), scoped pulls, and pending
// pushes that may or may not have committed.
var linpModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{linModel.Init()} },
	Step: func(state, input, output any) []any {
		st := state.(linState)
		in := input.(linpCall)
		if in.Kind == "pull" {
			out := output.(linpReturn)
			view := linState{seq: st.seq, files: map[string]string{}}
			for p, c := range st.files {
				if linpInScope(p, in.Scope) {
					view.files[p] = c
				}
			}
			for p := range out.Files {
				if _, ok := view.files[p]; !ok {
					return nil // a file the snapshot does not hold
				}
			}
			ok, _ := linModel.Step(view, nil, linPullOut{seq: out.Seq, files: out.Files})
			if !ok {
				return nil
			}
			return []any{st}
		}
		apply := func(skip map[string]bool) linState {
			next := linState{seq: st.seq + 1, files: maps.Clone(st.files)}
			for p, c := range in.Changes {
				switch {
				case skip[p]:
				case c == "":
					delete(next.files, p)
				default:
					next.files[p] = c
				}
			}
			return next
		}
		if _, pending := output.(linpPending); pending {
			return []any{st, apply(nil)} // killed: committed or not
		}
		out := output.(linpReturn)
		if !out.Committed {
			return []any{st}
		}
		if out.Seq != st.seq+1 {
			return nil
		}
		skip := map[string]bool{}
		for _, p := range out.Conflicts {
			skip[p] = true
		}
		return []any{apply(skip)}
	},
	Equal:             linModel.Equal,
	DescribeOperation: func(input, output any) string { return fmt.Sprintf("%+v -> %+v", input, output) },
}

// TestLinearProcHelper is a child of the process test; without its
// environment it does nothing.
func TestLinearProcHelper(t *testing.T) {
	role := os.Getenv(envLinRole)
	if role == "" {
		t.Skip("only runs as a child process of the linearizability test")
	}
	if err := linpChild(role); err != nil {
		t.Fatal(err)
	}
}

func linpChild(role string) error {
	ctx := context.Background()
	id, _ := strconv.Atoi(os.Getenv(envLinID))
	ops, _ := strconv.Atoi(os.Getenv(envLinOps))
	seed, _ := strconv.ParseUint(os.Getenv(envLinSeed), 10, 64)
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	b, err := backend.Open(ctx, os.Getenv(envLinURL))
	if err != nil {
		return err
	}
	k := &killer{Backend: b}
	killOp, killReq := -1, 0
	if v := os.Getenv(envLinKill); v != "" {
		if _, err := fmt.Sscanf(v, "%d:%d", &killOp, &killReq); err != nil {
			return fmt.Errorf("%s=%q: %w", envLinKill, v, err)
		}
	}
	s, err := syncer.Open(ctx, syncer.Config{Backend: k, Dir: os.Getenv(envLinDir), ShardMaxEntries: 4, CommitAttempts: 100, CheckpointEvery: modelCheckpointEvery})
	if err != nil {
		return err
	}
	defer s.Close()
	logf, err := os.OpenFile(os.Getenv(envLinLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	record := func(r linpRecord) error {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		// One write per line, unbuffered: a SIGKILL loses nothing written.
		_, err = logf.Write(append(line, '\n'))
		return err
	}
	// The start line: the parent closes stdin once every child is open.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	w := &linpWriter{s: s, id: id, rng: rng, own: map[string]bool{}}
	for op := range ops {
		var call linpCall
		if role == "reader" {
			call = linpCall{Kind: "pull", Scope: rapidScope(rng)}
		} else {
			call = w.plan(op, op == killOp)
			if err := w.apply(call); err != nil {
				return err
			}
		}
		if err := record(linpRecord{Op: op, T: monoNow(), Call: &call}); err != nil {
			return err
		}
		if op == killOp {
			k.at = atomic.LoadInt64(&k.n) + int64(killReq)
		}
		var ret linpReturn
		if role == "reader" {
			ret, err = linpPull(ctx, s, call.Scope)
		} else {
			ret, err = w.push(ctx, call)
		}
		if err != nil {
			return fmt.Errorf("%s %d op %d %+v: %w", role, id, op, call, err)
		}
		if err := record(linpRecord{Op: op, T: monoNow(), Return: &ret}); err != nil {
			return err
		}
		if role == "writer" && (len(ret.Conflicts) > 0 || !ret.Committed) {
			if err := w.settle(ctx, call); err != nil {
				return err
			}
		}
	}
	return nil
}

// rapidScope draws a reader's scope: everything, the shared directory, one
// writer's directory, or one shared file.
func rapidScope(rng *rand.Rand) string {
	return []string{"", "", "data/shared", fmt.Sprintf("data/w/%d", rng.IntN(linWriters)), "data/shared/x"}[rng.IntN(5)]
}

func linpPull(ctx context.Context, s *syncer.Syncer, scope string) (linpReturn, error) {
	opts := syncer.PullOptions{}
	if scope != "" {
		opts.Scope = []string{scope}
	}
	st, err := s.Pull(ctx, opts)
	if err != nil {
		return linpReturn{}, err
	}
	if len(st.Conflicts) > 0 {
		return linpReturn{}, fmt.Errorf("a reader's pull reported conflicts %v", st.Conflicts)
	}
	ret := linpReturn{Seq: st.Seq, Files: map[string]string{}}
	root := filepath.Join(s.Root(), filepath.FromSlash(scope))
	err = filepath.WalkDir(root, func(abs string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) && abs == root {
			return nil // nothing committed in scope
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == index.InternalDir {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(s.Root(), abs)
		ret.Files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	return ret, err
}

// linpWriter is one writer's cache and what it holds of its own paths.
type linpWriter struct {
	s   *syncer.Syncer
	id  int
	rng *rand.Rand
	own map[string]bool // own paths present locally
}

// plan draws a push: one or two edits of own paths (a write, or a deletion
// of a present one) and sometimes a write of a shared path. A push that
// will be killed changes own paths only, so that it commits whole or not.
func (w *linpWriter) plan(op int, killed bool) linpCall {
	call := linpCall{Kind: []string{"push", "paths", "twophase"}[w.rng.IntN(3)], Changes: map[string]string{}}
	if killed {
		call.Kind = "push"
	}
	for range 1 + w.rng.IntN(2) {
		p := fmt.Sprintf("data/w/%d/%c", w.id, 'a'+w.rng.IntN(3))
		call.Changes[p] = fmt.Sprintf("w%d op%d %s", w.id, op, p)
		if w.own[p] && w.rng.IntN(3) == 0 {
			call.Changes[p] = ""
		}
	}
	if !killed && w.rng.IntN(2) == 0 {
		p := "data/shared/" + []string{"x", "y"}[w.rng.IntN(2)]
		call.Changes[p] = fmt.Sprintf("w%d op%d %s", w.id, op, p)
	}
	return call
}

// apply makes the planned edits in the cache and marks them (a Paths push
// names them instead).
func (w *linpWriter) apply(call linpCall) error {
	for _, p := range slices.Sorted(maps.Keys(call.Changes)) {
		abs := filepath.Join(w.s.Root(), filepath.FromSlash(p))
		if c := call.Changes[p]; c == "" {
			if err := os.Remove(abs); err != nil {
				return err
			}
			delete(w.own, p)
		} else {
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
				return err
			}
			if path.Dir(p) != "data/shared" {
				w.own[p] = true
			}
		}
		if call.Kind != "paths" {
			if err := w.s.MarkDirty(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *linpWriter) push(ctx context.Context, call linpCall) (linpReturn, error) {
	var st syncer.Stats
	var prep []syncer.Conflict
	var err error
	switch call.Kind {
	case "paths":
		st, err = w.s.Push(ctx, syncer.PushOptions{Paths: slices.Sorted(maps.Keys(call.Changes))})
	case "twophase":
		var pm *syncer.PushManifest
		var ps syncer.Stats
		if pm, ps, err = w.s.PreparePush(ctx, syncer.PushOptions{}); err == nil {
			prep = ps.Conflicts
			st, err = w.s.CommitPush(ctx, pm, nil)
		}
	default:
		st, err = w.s.Push(ctx, syncer.PushOptions{})
	}
	if err != nil {
		return linpReturn{}, err
	}
	ret := linpReturn{Seq: st.Seq, Committed: st.Commit != nil}
	for _, c := range append(prep, st.Conflicts...) {
		ret.Conflicts = append(ret.Conflicts, c.Path)
	}
	return ret, nil
}

// settle takes the committed copy of every path a push did not commit, so
// that the next push is clean: as linear_test.go does, pull (the conflict
// stays), drop the local copy, pull again.
func (w *linpWriter) settle(ctx context.Context, call linpCall) error {
	if _, err := w.s.Pull(ctx, syncer.PullOptions{}); err != nil {
		return err
	}
	for p := range call.Changes {
		if path.Dir(p) == "data/shared" {
			if err := os.Remove(filepath.Join(w.s.Root(), filepath.FromSlash(p))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	_, err := w.s.Pull(ctx, syncer.PullOptions{})
	return err
}

var linpFigures struct{ histories, processes, ops, pending, commits, lost atomic.Int64 }

func linpHistories() int {
	if v, err := strconv.Atoi(os.Getenv(linHistoriesEnv)); err == nil && v > 0 {
		return v
	}
	return 2
}

func TestLinearizability_SeparateProcesses_AreLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary 12 times per history")
	}
	base := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("RAPID_SEED"), 10, 64); err == nil {
		base = v // the CI seed: a red run replays
	}
	n := linpHistories()
	for h := range n {
		seed := base + uint64(h)
		killed := h%2 == 1
		name := fmt.Sprintf("history%d", h)
		if killed {
			name += "-killed"
		}
		t.Run(name, func(t *testing.T) { runLinearProcesses(t, seed, killed) })
	}
	t.Logf("linearizability across processes: %d histories, %d processes, %d operations (%d commits, %d pushes that lost a race on a path, %d pending: killed mid-push), seeds from %d",
		linpFigures.histories.Load(), linpFigures.processes.Load(), linpFigures.ops.Load(), linpFigures.commits.Load(), linpFigures.lost.Load(), linpFigures.pending.Load(), base)
}

func runLinearProcesses(t *testing.T, seed uint64, kill bool) {
	bucket := t.TempDir()
	url := "file://" + bucket
	rng := rand.New(rand.NewPCG(seed, 0))
	victim := -1
	if kill {
		victim = rng.IntN(linWriters)
	}
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		out    *lockedBuffer
		log    string
		victim bool
	}
	var children []*child
	logs := t.TempDir()
	for i := range linWriters + linReaders {
		role, id := "writer", i
		if i >= linWriters {
			role, id = "reader", i-linWriters
		}
		c := &child{log: filepath.Join(logs, fmt.Sprintf("%d.jsonl", i)), out: &lockedBuffer{}, victim: i == victim}
		c.cmd = exec.Command(os.Args[0], "-test.run=^TestLinearProcHelper$", "-test.count=1")
		c.cmd.Env = append(os.Environ(), envLinRole+"="+role, envLinID+"="+strconv.Itoa(id), envLinURL+"="+url,
			envLinDir+"="+t.TempDir(), envLinLog+"="+c.log, envLinOps+"="+strconv.Itoa(linProcOps), envLinSeed+"="+strconv.FormatUint(seed, 10))
		if c.victim {
			c.cmd.Env = append(c.cmd.Env, fmt.Sprintf("%s=%d:%d", envLinKill, linProcOps-1, 1+rng.IntN(6)))
		}
		c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, c)
	}
	for _, c := range children {
		c.stdin.Close() // the start line
	}
	killedOK := false
	for i, c := range children {
		err := c.cmd.Wait()
		if c.victim && err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
					killedOK = true
					continue
				}
			}
		}
		if err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, c.out.String())
		}
	}
	var history []porcupine.Operation
	pending := 0
	for i, c := range children {
		ops, p, err := readLinpLog(i, c.log)
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, ops...)
		pending += p
		for _, op := range ops {
			if r, ok := op.Output.(linpReturn); ok && op.Input.(linpCall).Kind != "pull" {
				if r.Committed {
					linpFigures.commits.Add(1)
				}
				if len(r.Conflicts) > 0 || !r.Committed {
					linpFigures.lost.Add(1)
				}
			}
		}
	}
	if kill && killedOK && pending != 1 {
		t.Errorf("the killed writer left %d pending operations, want 1", pending)
	}
	// A killed push leaves the committed index whole and readable.
	ctx := context.Background()
	store, err := backend.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkIndexStructure(ctx, store); err != nil {
		t.Errorf("torn index: %v", err)
	}
	if snap, err := readSnapshot(ctx, store); err != nil {
		t.Error(err)
	} else {
		for p, e := range snap.Entries {
			if _, err := readEntry(ctx, store, p, e); err != nil {
				t.Errorf("committed %q unreadable: %v", p, err)
			}
		}
	}
	res := porcupine.CheckOperationsTimeout(linpModel.ToModel(), history, 30*time.Second)
	linpFigures.histories.Add(1)
	linpFigures.processes.Add(int64(len(children)))
	linpFigures.ops.Add(int64(len(history)))
	linpFigures.pending.Add(int64(pending))
	t.Logf("seed %d: %d processes, %d operations (%d pending), killed writer %d (killed: %v): %v", seed, len(children), len(history), pending, victim, killedOK, res)
	if res != porcupine.Ok {
		for _, op := range history {
			t.Logf("client %d [%d, %d] %+v -> %+v", op.ClientId, op.Call, op.Return, op.Input, op.Output)
		}
		t.Errorf("history of pushes and pulls of separate processes is not linearizable (%v); seed %d", res, seed)
	}
}

// readLinpLog pairs the calls and returns of one child's log; a call with
// no return is pending, with a return time past every other.
func readLinpLog(client int, name string) ([]porcupine.Operation, int, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var ops []porcupine.Operation
	open := map[int]int{} // op -> index in ops
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r linpRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", name, err)
		}
		switch {
		case r.Call != nil:
			open[r.Op] = len(ops)
			ops = append(ops, porcupine.Operation{ClientId: client, Input: *r.Call, Call: r.T, Output: linpPending{}, Return: math.MaxInt64})
		case r.Return != nil:
			i, ok := open[r.Op]
			if !ok {
				return nil, 0, fmt.Errorf("%s: return of op %d without its call", name, r.Op)
			}
			delete(open, r.Op)
			ops[i].Output, ops[i].Return = *r.Return, r.T
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	return ops, len(open), nil
}

// lockedBuffer collects a child's output from both of its pipes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLinearizability_ProcessModel_RejectsStaleAndTornReads(t *testing.T) {
	push := linpCall{Kind: "push", Changes: map[string]string{"data/w/0/a": "v1", "data/shared/x": "s1"}}
	committed := linpReturn{Seq: 1, Committed: true}
	for name, tc := range map[string]struct {
		pull linpReturn
		want porcupine.CheckResult
	}{
		"whole":      {linpReturn{Seq: 1, Files: map[string]string{"data/w/0/a": "v1", "data/shared/x": "s1"}}, porcupine.Ok},
		"stale seq":  {linpReturn{Seq: 0, Files: map[string]string{}}, porcupine.Illegal},
		"torn":       {linpReturn{Seq: 1, Files: map[string]string{"data/w/0/a": "v1"}}, porcupine.Illegal},
		"extra file": {linpReturn{Seq: 1, Files: map[string]string{"data/w/0/a": "v1", "data/shared/x": "s1", "data/w/0/b": "?"}}, porcupine.Illegal},
	} {
		t.Run(name, func(t *testing.T) {
			h := []porcupine.Operation{
				{ClientId: 0, Input: push, Call: 0, Output: committed, Return: 10},
				{ClientId: 1, Input: linpCall{Kind: "pull"}, Call: 20, Output: tc.pull, Return: 30},
			}
			if got := porcupine.CheckOperationsTimeout(linpModel.ToModel(), h, 0); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// A push killed before it returned may have committed, or not.
	for _, seq := range []uint64{0, 1} {
		files := map[string]string{}
		if seq == 1 {
			files = map[string]string{"data/w/0/a": "v1", "data/shared/x": "s1"}
		}
		h := []porcupine.Operation{
			{ClientId: 0, Input: push, Call: 0, Output: linpPending{}, Return: math.MaxInt64},
			{ClientId: 1, Input: linpCall{Kind: "pull", Scope: "data/w/0"}, Call: 20, Output: linpReturn{Seq: seq, Files: map[string]string{"data/w/0/a": files["data/w/0/a"]}}, Return: 30},
		}
		if seq == 0 {
			h[1].Output = linpReturn{Seq: 0, Files: map[string]string{}}
		}
		if got := porcupine.CheckOperationsTimeout(linpModel.ToModel(), h, 0); got != porcupine.Ok {
			t.Errorf("pending push, pull seeing seq %d: got %v, want Ok", seq, got)
		}
	}
}
