package peers

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Plot kinds for [Report.WritePlot].
const (
	PlotRequests = "requests"
	PlotTime     = "time"
)

// toolColours are the line colours of the plots, per tool.
var toolColours = map[string]string{ToolSilt: "#1b7837", ToolRclone: "#2166ac", ToolAWS: "#b2182b"}

// Panel geometry of the plots, in pixels.
const (
	panelW, panelH = 260, 190
	panelCols      = 3
	padL, padR     = 52, 22
	padT, padB     = 28, 34
)

// WritePlot writes an SVG of one panel per operation: the median requests
// (PlotRequests) or wall time (PlotTime) of each tool against the
// namespace size, on log–log axes.
func (rep *Report) WritePlot(w io.Writer, kind string) error {
	value := func(c *Cell) float64 { return c.Requests }
	unit := "requests"
	if kind == PlotTime {
		value = func(c *Cell) float64 { return c.WallMs.Median / 1000 }
		unit = "seconds"
	} else if kind != PlotRequests {
		return fmt.Errorf("peers: unknown plot %q", kind)
	}
	var ops []string
	for _, ri := range Rows() {
		for _, r := range rep.Results {
			if r.Row == ri.Name {
				ops = append(ops, ri.Name)
				break
			}
		}
	}
	sizes := rep.sizes()
	tools := rep.toolNames()
	rowsN := (len(ops) + panelCols - 1) / panelCols
	width, height := panelCols*panelW, rowsN*panelH+30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	// Legend.
	for i, t := range tools {
		x := 10 + i*80
		fmt.Fprintf(&b, `<line x1="%d" y1="15" x2="%d" y2="15" stroke="%s" stroke-width="2.5"/><text x="%d" y="19">%s</text>`+"\n", x, x+24, toolColours[t], x+30, t)
	}
	fmt.Fprintf(&b, `<text x="%d" y="19" text-anchor="end">%s per operation (median; log scales; 0 drawn at %g), %g ms per request</text>`+"\n",
		width-10, unit, minPositive(kind), rep.LatencyMs)
	for i, op := range ops {
		ox, oy := (i%panelCols)*panelW, 30+(i/panelCols)*panelH
		// Collect the points, to fix the y range.
		pts := map[string][][2]float64{}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range rep.Results {
			if r.Row != op {
				continue
			}
			for _, t := range tools {
				if c := r.Cell(t); c != nil {
					v := math.Max(value(c), minPositive(kind))
					pts[t] = append(pts[t], [2]float64{float64(r.Files), v})
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if yhi == ylo {
			yhi++
		}
		xlo, xhi := math.Log10(float64(sizes[0])), math.Log10(float64(sizes[len(sizes)-1]))
		if xhi == xlo {
			xlo, xhi = xlo-0.5, xhi+0.5
		}
		pw, ph := float64(panelW-padL-padR), float64(panelH-padT-padB)
		px := func(n float64) float64 { return float64(ox+padL) + (math.Log10(n)-xlo)/(xhi-xlo)*pw }
		py := func(v float64) float64 { return float64(oy+padT) + (yhi-math.Log10(v))/(yhi-ylo)*ph }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", ox+padL, oy+padT-8, op)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", ox+padL, oy+padT, pw, ph)
		for e := ylo; e <= yhi; e++ {
			y := py(math.Pow(10, e))
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
				ox+padL, y, float64(ox+padL)+pw, y, ox+padL-4, y+4, tick(math.Pow(10, e)))
		}
		for _, n := range sizes {
			x := px(float64(n))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, float64(oy+padT)+ph+14, sizeTick(n))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">files</text>`+"\n", float64(ox+padL)+pw/2, float64(oy+padT)+ph+27)
		// Drawn last, silt stays visible where a peer's line coincides.
		for i := len(tools) - 1; i >= 0; i-- {
			t := tools[i]
			p := pts[t]
			sort.Slice(p, func(i, j int) bool { return p[i][0] < p[j][0] })
			var path []string
			for _, q := range p {
				path = append(path, fmt.Sprintf("%.1f,%.1f", px(q[0]), py(q[1])))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(q[0]), py(q[1]), toolColours[t])
			}
			if len(path) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(path, " "), toolColours[t])
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// minPositive is what a zero is drawn as on a log axis (0 requests of a
// no-op push sit on the bottom line).
func minPositive(kind string) float64 {
	if kind == PlotTime {
		return 0.001
	}
	return 0.5
}

func tick(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%gk", v/1000)
	}
	return fmt.Sprintf("%g", v)
}

// sizeTick labels a namespace size the way the rows name it: 10,010
// files is "10k".
func sizeTick(n int) string {
	if n >= 1000 {
		return fmt.Sprintf("%.0fk", float64(n)/1000)
	}
	return fmt.Sprint(n)
}
