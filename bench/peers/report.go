package peers

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/siltsync/silt/bench/peers/proxy"
)

// Sample is one measured operation: one tool, one row, one run.
type Sample struct {
	Row       string  `json:"row"`
	Tool      string  `json:"tool"`
	Files     int     `json:"files"`
	Run       int     `json:"run"`
	LatencyMs float64 `json:"latencyMs"`
	Usage
	// Requests are what the proxy saw.
	Requests proxy.Counts `json:"requests"`
	// Self are the requests the tool reported itself (silt only), and
	// SelfMatches whether they equal the proxy's.
	Self        *SelfCounts `json:"self,omitempty"`
	SelfMatches bool        `json:"selfMatches,omitempty"`
	// Missed is set when a pull did not bring a peer's change.
	Missed bool   `json:"missed,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Stat is the median, minimum and maximum of a value over runs.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func statOf(v []float64) Stat {
	if len(v) == 0 {
		return Stat{}
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[len(s)-1]}
}

// Cell is one tool on one row at one size, over its runs.
type Cell struct {
	Tool string `json:"tool"`
	Runs int    `json:"runs"`
	// WallMs, CPUMs and MaxRSSMiB are over the runs.
	WallMs    Stat `json:"wallMs"`
	CPUMs     Stat `json:"cpuMs"`
	MaxRSSMiB Stat `json:"maxRssMiB"`
	// Requests is the median total of requests; RequestsMin and
	// RequestsMax show whether it varied. Ops is the median per
	// operation.
	Requests    float64            `json:"requests"`
	RequestsMin int64              `json:"requestsMin"`
	RequestsMax int64              `json:"requestsMax"`
	Ops         map[string]float64 `json:"ops"`
	Errors      int64              `json:"errors"`
	// WallRatio and RequestRatio are this tool's median over silt's (1
	// for silt, 0 when silt did not run or its median was 0).
	WallRatio    float64 `json:"wallRatio"`
	RequestRatio float64 `json:"requestRatio"`
	// SelfMatched counts the runs whose own counts equalled the proxy's
	// (silt only).
	SelfMatched int `json:"selfMatched,omitempty"`
	// Missed counts runs that did not bring a peer's change.
	Missed int      `json:"missed,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// RowResult is one row at one size, every tool side by side.
type RowResult struct {
	Row       string  `json:"row"`
	Desc      string  `json:"desc"`
	Files     int     `json:"files"`
	LatencyMs float64 `json:"latencyMs"`
	Cells     []Cell  `json:"cells"`
}

// Cell returns the cell of tool, or nil.
func (r *RowResult) Cell(tool string) *Cell {
	for i := range r.Cells {
		if r.Cells[i].Tool == tool {
			return &r.Cells[i]
		}
	}
	return nil
}

// ToolInfo is a tool that ran: where it was found and its version.
type ToolInfo struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version string `json:"version"`
}

// Machine is where a run happened.
type Machine struct {
	CPUs      int     `json:"cpus"`
	MemoryMiB int64   `json:"memoryMiB"`
	Go        string  `json:"go"`
	OS        string  `json:"os"`
	Kernel    string  `json:"kernel"`
	LoadAvg   float64 `json:"loadAvg1m"` // at the start
}

// Report is a whole run: the aggregated rows and every sample.
type Report struct {
	Start     time.Time   `json:"start"`
	End       time.Time   `json:"end"`
	Machine   Machine     `json:"machine"`
	LatencyMs float64     `json:"latencyMs"`
	Tools     []ToolInfo  `json:"tools"`
	Missing   []string    `json:"missing,omitempty"`
	Results   []RowResult `json:"results"`
	Samples   []Sample    `json:"samples"`
}

func newReport(cfg Config) *Report {
	return &Report{Start: time.Now().UTC(), Machine: machine(), LatencyMs: ms(cfg.Latency)}
}

// finish aggregates the samples into Results.
func (rep *Report) finish() {
	rep.End = time.Now().UTC()
	rep.Results = Aggregate(rep.Samples)
}

// Aggregate groups samples by size and row (in the order they first
// appear) and summarises each tool's runs.
func Aggregate(samples []Sample) []RowResult {
	type key struct {
		files int
		row   string
	}
	var order []key
	groups := map[key][]Sample{}
	for _, s := range samples {
		k := key{s.Files, s.Row}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	descs := map[string]string{}
	for _, ri := range Rows() {
		descs[ri.Name] = ri.Desc
	}
	var out []RowResult
	for _, k := range order {
		ss := groups[k]
		rr := RowResult{Row: k.row, Desc: descs[k.row], Files: k.files, LatencyMs: ss[0].LatencyMs}
		var tools []string
		byTool := map[string][]Sample{}
		for _, s := range ss {
			if _, ok := byTool[s.Tool]; !ok {
				tools = append(tools, s.Tool)
			}
			byTool[s.Tool] = append(byTool[s.Tool], s)
		}
		// silt first, then the peers in the order they were configured.
		sort.SliceStable(tools, func(i, j int) bool { return tools[i] == ToolSilt && tools[j] != ToolSilt })
		for _, t := range tools {
			rr.Cells = append(rr.Cells, cellOf(t, byTool[t]))
		}
		if base := rr.Cell(ToolSilt); base != nil {
			for i := range rr.Cells {
				c := &rr.Cells[i]
				if base.WallMs.Median > 0 {
					c.WallRatio = c.WallMs.Median / base.WallMs.Median
				}
				if base.Requests > 0 {
					c.RequestRatio = c.Requests / base.Requests
				}
			}
		}
		out = append(out, rr)
	}
	return out
}

func cellOf(tool string, ss []Sample) Cell {
	c := Cell{Tool: tool, Runs: len(ss), Ops: map[string]float64{}}
	var wall, cpu, rss, total []float64
	ops := map[string][]float64{}
	for _, s := range ss {
		for name := range s.Requests.Ops {
			ops[name] = nil
		}
	}
	c.RequestsMin = -1
	for _, s := range ss {
		wall = append(wall, s.WallMs)
		cpu = append(cpu, s.CPUMs)
		rss = append(rss, float64(s.MaxRSSKiB)/1024)
		n := s.Requests.Total()
		total = append(total, float64(n))
		if c.RequestsMin < 0 || n < c.RequestsMin {
			c.RequestsMin = n
		}
		c.RequestsMax = max(c.RequestsMax, n)
		for name := range ops {
			ops[name] = append(ops[name], float64(s.Requests.Ops[name]))
		}
		c.Errors += s.Requests.Errors
		if s.SelfMatches {
			c.SelfMatched++
		}
		if s.Missed {
			c.Missed++
		}
		if s.Note != "" && !slices.Contains(c.Notes, s.Note) {
			c.Notes = append(c.Notes, s.Note)
		}
	}
	c.WallMs, c.CPUMs, c.MaxRSSMiB = statOf(wall), statOf(cpu), statOf(rss)
	c.Requests = statOf(total).Median
	for name, v := range ops {
		c.Ops[name] = statOf(v).Median
	}
	return c
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// Problems lists the samples of tools that report their own requests
// (silt) whose counts differ from the proxy's, and every sample of any
// tool that missed a change or left files out. An empty list is what the
// CI smoke requires.
func (rep *Report) Problems() []string {
	var out []string
	for _, s := range rep.Samples {
		if s.Self != nil && !s.SelfMatches {
			out = append(out, fmt.Sprintf("%s %s at %d, run %d: own counts %+v, proxy %v", s.Tool, s.Row, s.Files, s.Run, *s.Self, s.Requests.Ops))
		} else if s.Note != "" {
			out = append(out, fmt.Sprintf("%s %s at %d, run %d: %s", s.Tool, s.Row, s.Files, s.Run, s.Note))
		}
	}
	return out
}

// Merge reads reports written by [Report.WriteJSON] (for instance one per
// namespace size) and returns one report of all their samples, with the
// first one's machine and tools and the earliest start and latest end.
func Merge(paths ...string) (*Report, error) {
	var out *Report
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var rep Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, fmt.Errorf("peers: %s: %w", p, err)
		}
		if out == nil {
			out = &rep
			continue
		}
		if rep.Start.Before(out.Start) {
			out.Start = rep.Start
		}
		if rep.End.After(out.End) {
			out.End = rep.End
		}
		for _, t := range rep.Tools {
			if !slices.ContainsFunc(out.Tools, func(u ToolInfo) bool { return u.Name == t.Name }) {
				out.Tools = append(out.Tools, t)
			}
		}
		out.Samples = append(out.Samples, rep.Samples...)
	}
	if out == nil {
		return nil, fmt.Errorf("%w: nothing to merge", ErrBadConfig)
	}
	out.Results = Aggregate(out.Samples)
	return out, nil
}
