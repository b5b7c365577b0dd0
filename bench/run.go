package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siltsync/silt/syncer"
)

// Requests are the requests of one measured operation, per verb. A
// conditional put is CondPut, not Put; every List page is one List.
type Requests struct {
	Get     int64 `json:"get"`
	Put     int64 `json:"put"`
	CondPut int64 `json:"condput"`
	List    int64 `json:"list"`
	Delete  int64 `json:"delete"`
	Stat    int64 `json:"stat"`
	Total   int64 `json:"total"`
}

// RequestsOf converts a syncer's request counts, dropping byte counts.
func RequestsOf(c syncer.RequestCounts) Requests {
	return Requests{Get: c.Get, Put: c.Put, CondPut: c.CondPut, List: c.List, Delete: c.Delete, Stat: c.Stat, Total: c.Total()}
}

// PhaseStat is the wall time of one phase over the trials, in
// milliseconds, in the reference benchmark's shape.
type PhaseStat struct {
	Phase  string  `json:"phase"`
	Min    float64 `json:"min"`
	Avg    float64 `json:"avg"`
	Max    float64 `json:"max"`
	Trials int     `json:"trials"`
}

// Result is one scenario run at one size: the reference benchmark's JSON
// shape (name, phases, wallMin/Avg/Max, trials) plus silt's request counts.
type Result struct {
	// Name is the scenario's name.
	Name string `json:"name"`
	// Ref names the comparable reference scenario, if any.
	Ref string `json:"ref,omitempty"`
	// Backend is the bucket kind, "mem" or "fs".
	Backend string `json:"backend"`
	// LatencyMs is the delay added to each request, in milliseconds.
	LatencyMs float64 `json:"latencyMs"`
	// Entries is the size of the namespace.
	Entries int `json:"entries"`
	// Phases are the syncer's phases ("pull.manifest", "push.commit"...),
	// in the order the operation ran them.
	Phases []PhaseStat `json:"phases"`
	// WallMin, WallAvg and WallMax are the measured operation's wall time
	// over the trials, in milliseconds.
	WallMin float64 `json:"wallMin"`
	WallAvg float64 `json:"wallAvg"`
	WallMax float64 `json:"wallMax"`
	// Trials is how many times the operation ran.
	Trials int `json:"trials"`
	// CPUAvg is the process's CPU time (user and system) during the
	// measured operation, averaged over the trials, in milliseconds.
	CPUAvg float64 `json:"cpuAvg"`
	// Requests are the requests one operation sent, from the syncer's own
	// exact accounting (syncer.Stats.Counts).
	Requests Requests `json:"requests"`
	// Deterministic is true when every trial sent exactly the same
	// requests; PerTrial then is omitted.
	Deterministic bool `json:"deterministic"`
	// PerTrial lists every trial's requests when they differed.
	PerTrial []Requests `json:"perTrial,omitempty"`
	// Mismatch, when set, says how the syncer's counts differed from an
	// independent counter's: requests the syncer did not account for.
	Mismatch string `json:"mismatch,omitempty"`
	// DataPuts counts the puts of data (not index) objects in one trial.
	DataPuts int64 `json:"dataPuts"`
	// BytesDown and BytesUp are the body bytes moved by one trial.
	BytesDown int64 `json:"bytesDown"`
	BytesUp   int64 `json:"bytesUp"`
	// Files is what the last trial did, by outcome.
	Files syncer.FileStats `json:"files"`
	// Examined is how many local files the last trial stat'ed.
	Examined int `json:"examined"`
	// SetupMs is how long seeding and setup took (not measured).
	SetupMs float64 `json:"setupMs"`
}

// Run sets sc up in env at entries entries, runs trials trials and
// summarises them.
func Run(ctx context.Context, sc Scenario, env Env, entries, trials int) (res Result, err error) {
	if trials < 1 {
		return Result{}, fmt.Errorf("bench: trials must be at least 1")
	}
	in, err := sc.Setup(ctx, env, entries)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if cerr := in.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	var ts []Trial
	for range trials {
		if err := in.Prepare(ctx); err != nil {
			return Result{}, err
		}
		t, err := in.Measure(ctx)
		if err != nil {
			return Result{}, err
		}
		ts = append(ts, t)
	}
	res = Summarize(sc, env, in.Entries, ts)
	res.SetupMs = ms(in.Setup)
	return res, nil
}

// Summarize turns trials of sc into a Result.
func Summarize(sc Scenario, env Env, entries int, ts []Trial) Result {
	be := env.Backend
	if be == "" {
		be = BackendMem
	}
	r := Result{Name: sc.Name, Ref: sc.Ref, Backend: be, LatencyMs: ms(env.Latency), Entries: entries, Trials: len(ts), Deterministic: true, Phases: []PhaseStat{}}
	if len(ts) == 0 {
		return r
	}
	first, last := ts[0], ts[len(ts)-1]
	r.Requests = RequestsOf(first.Stats.Counts)
	r.DataPuts = first.DataPuts
	r.BytesDown, r.BytesUp = first.Stats.Counts.BytesDown, first.Stats.Counts.BytesUp
	r.Files = last.Stats.Files
	r.Examined = last.Stats.Local.Examined

	var walls, cpus []float64
	var order []string
	phases := map[string][]float64{}
	for _, t := range ts {
		walls = append(walls, ms(t.Wall))
		cpus = append(cpus, ms(t.CPU))
		if q := RequestsOf(t.Stats.Counts); q != r.Requests {
			r.Deterministic = false
		}
		if got, seen := RequestsOf(t.Stats.Counts), RequestsOf(t.Observed); got != seen && r.Mismatch == "" {
			r.Mismatch = fmt.Sprintf("syncer reported %+v, the counter outside it saw %+v", got, seen)
		}
		// A phase can repeat within an operation (a pull that restarts):
		// its trial time is the sum.
		sum := map[string]float64{}
		for _, p := range t.Stats.Phases {
			name := t.Stats.Op + "." + p.Name
			if _, ok := phases[name]; !ok {
				phases[name] = nil
				order = append(order, name)
			}
			sum[name] += p.Ms
		}
		for name, v := range sum {
			phases[name] = append(phases[name], v)
		}
	}
	if !r.Deterministic {
		for _, t := range ts {
			r.PerTrial = append(r.PerTrial, RequestsOf(t.Stats.Counts))
		}
	}
	r.WallMin, r.WallAvg, r.WallMax = minAvgMax(walls)
	_, r.CPUAvg, _ = minAvgMax(cpus)
	for _, name := range order {
		lo, avg, hi := minAvgMax(phases[name])
		r.Phases = append(r.Phases, PhaseStat{Phase: name, Min: lo, Avg: avg, Max: hi, Trials: len(phases[name])})
	}
	return r
}

func minAvgMax(xs []float64) (lo, avg, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	lo, hi = xs[0], xs[0]
	var sum float64
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
		sum += x
	}
	return round3(lo), round3(sum / float64(len(xs))), round3(hi)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }
