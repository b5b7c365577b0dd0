package peers

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/siltsync/silt/bench/peers/proxy"
)

func TestStatOf_OddAndEven_MedianMinMax(t *testing.T) {
	if got := statOf([]float64{3, 1, 2}); got != (Stat{Median: 2, Min: 1, Max: 3}) {
		t.Errorf("odd: %+v", got)
	}
	if got := statOf([]float64{4, 1, 2, 3}); got != (Stat{Median: 2.5, Min: 1, Max: 4}) {
		t.Errorf("even: %+v", got)
	}
}

func TestSelfCounts_Matches_ProxyOperations(t *testing.T) {
	p := proxy.Counts{Ops: map[string]int64{proxy.OpGetObject: 1, proxy.OpPutObject: 3}}
	if !(SelfCounts{Get: 1, Put: 3}).matches(p) {
		t.Error("equal counts do not match")
	}
	if (SelfCounts{Get: 1, Put: 2}).matches(p) {
		t.Error("one put fewer matches")
	}
	p.Ops[proxy.OpListBuckets] = 1
	if (SelfCounts{Get: 1, Put: 3}).matches(p) {
		t.Error("a request silt did not count matches")
	}
}

func sample(tool, row string, run int, wall float64, gets int64) Sample {
	return Sample{Tool: tool, Row: row, Files: 1001, Run: run, LatencyMs: 10, Usage: Usage{WallMs: wall, CPUMs: wall / 2, MaxRSSKiB: 40 << 10},
		Requests: proxy.Counts{Ops: map[string]int64{proxy.OpGetObject: gets}}}
}

func testReport() *Report {
	var ss []Sample
	for run := 1; run <= 3; run++ {
		ss = append(ss, sample(ToolRclone, RowNoopPull, run, 400+float64(run), 12), sample(ToolSilt, RowNoopPull, run, 100, 1))
	}
	ss = append(ss, sample(ToolSilt, RowNoopPush, 1, 50, 0), sample(ToolAWS, RowNoopPush, 1, 5000, 11))
	ss[len(ss)-1].Missed, ss[len(ss)-1].Note = true, "missed the change"
	rep := &Report{LatencyMs: 10, Tools: []ToolInfo{{Name: ToolSilt}, {Name: ToolRclone}, {Name: ToolAWS}}, Samples: ss}
	rep.Results = Aggregate(ss)
	return rep
}

func TestAggregate_Samples_SiltFirstWithRatios(t *testing.T) {
	rs := testReport().Results
	if len(rs) != 2 || rs[0].Row != RowNoopPull || rs[1].Row != RowNoopPush {
		t.Fatalf("rows %+v", rs)
	}
	c := rs[0].Cells
	if c[0].Tool != ToolSilt || c[1].Tool != ToolRclone {
		t.Fatalf("cells %s, %s: want silt first", c[0].Tool, c[1].Tool)
	}
	if c[1].Runs != 3 || c[1].WallMs.Median != 402 || c[1].Requests != 12 {
		t.Errorf("rclone cell %+v", c[1])
	}
	if c[1].WallRatio != 4.02 || c[1].RequestRatio != 12 || c[0].WallRatio != 1 {
		t.Errorf("ratios: rclone %v %v, silt %v", c[1].WallRatio, c[1].RequestRatio, c[0].WallRatio)
	}
	if rs[1].Cell(ToolAWS).Missed != 1 {
		t.Errorf("aws missed %d, want 1", rs[1].Cell(ToolAWS).Missed)
	}
}

func TestReport_WriteMarkdown_TablesOfEveryRow(t *testing.T) {
	var b bytes.Buffer
	if err := testReport().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"### 1,001 files, 10 ms per request", "| noop-pull | 0.10 s | 0.40 s | – | 1 / 12 / – |",
		"missed the change 1/1", "GetObject 12"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestReport_WritePlot_IsWellFormedSVG(t *testing.T) {
	rep := testReport()
	for _, kind := range []string{PlotRequests, PlotTime} {
		var b bytes.Buffer
		if err := rep.WritePlot(&b, kind); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(&b)
		n := 0
		for {
			tok, err := d.Token()
			if err != nil {
				break
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
				n++
			}
		}
		if n != 4 { // one point per tool and row
			t.Errorf("%s: %d points, want 4", kind, n)
		}
	}
	if err := rep.WritePlot(&bytes.Buffer{}, "bogus"); err == nil {
		t.Error("unknown plot kind accepted")
	}
}

func TestReport_Problems_SiltMismatchAndMissedChange(t *testing.T) {
	rep := testReport()
	rep.Samples[1].Self = &SelfCounts{Get: 2}
	p := rep.Problems()
	if len(p) != 2 || !strings.Contains(p[0], "own counts") || !strings.Contains(p[1], "missed") {
		t.Errorf("problems %q", p)
	}
}
