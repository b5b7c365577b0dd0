package peers

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteMarkdown writes the results as Markdown: per namespace size, a
// summary table (median time and requests of each tool, side by side) and
// a detailed one (min and max, client CPU, peak RSS, requests per
// operation, ratios to silt, notes).
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	tools := rep.toolNames()
	sizes := rep.sizes()
	for _, n := range sizes {
		rs := rep.resultsAt(n)
		fmt.Fprintf(&b, "### %s files, %g ms per request\n\n", thousands(int64(n)), rs[0].LatencyMs)
		b.WriteString("| operation |")
		for _, t := range tools {
			fmt.Fprintf(&b, " %s |", t)
		}
		fmt.Fprintf(&b, " requests %s |\n|---|", strings.Join(tools, " / "))
		b.WriteString(strings.Repeat("---|", len(tools)+1) + "\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "| %s |", r.Row)
			var reqs []string
			for _, t := range tools {
				c := r.Cell(t)
				if c == nil {
					b.WriteString(" – |")
					reqs = append(reqs, "–")
					continue
				}
				fmt.Fprintf(&b, " %s", seconds(c.WallMs.Median))
				if c.Missed > 0 {
					fmt.Fprintf(&b, " (missed the change %d/%d)", c.Missed, c.Runs)
				}
				b.WriteString(" |")
				reqs = append(reqs, requestsText(c))
			}
			fmt.Fprintf(&b, " %s |\n", strings.Join(reqs, " / "))
		}
		b.WriteString("\n<details><summary>details</summary>\n\n")
		b.WriteString("| operation | tool | runs | wall median (min–max) | client CPU | peak RSS | requests per operation | time × silt | requests × silt | notes |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range rs {
			for _, c := range r.Cells {
				fmt.Fprintf(&b, "| %s | %s | %d | %s (%s–%s) | %s | %.0f MiB | %s | %s | %s | %s |\n",
					r.Row, c.Tool, c.Runs, seconds(c.WallMs.Median), seconds(c.WallMs.Min), seconds(c.WallMs.Max),
					seconds(c.CPUMs.Median), c.MaxRSSMiB.Median, opsText(c), ratio(c.WallRatio), ratio(c.RequestRatio), notesText(c))
			}
		}
		b.WriteString("\n</details>\n\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// toolNames are the tools with results, silt first.
func (rep *Report) toolNames() []string {
	var out []string
	for _, t := range rep.Tools {
		out = append(out, t.Name)
	}
	return out
}

// sizes are the namespace sizes with results, in order.
func (rep *Report) sizes() []int {
	var out []int
	for _, r := range rep.Results {
		if len(out) == 0 || out[len(out)-1] != r.Files {
			out = append(out, r.Files)
		}
	}
	return out
}

func (rep *Report) resultsAt(n int) []RowResult {
	var out []RowResult
	for _, r := range rep.Results {
		if r.Files == n {
			out = append(out, r)
		}
	}
	return out
}

func seconds(ms float64) string {
	switch {
	case ms < 100:
		return fmt.Sprintf("%.3f s", ms/1000)
	case ms < 10_000:
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

func ratio(r float64) string {
	switch {
	case r == 0:
		return "–"
	case r >= 10:
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.2g×", r)
}

// requestsText is the median request count, with its range when it
// varied between runs.
func requestsText(c *Cell) string {
	s := thousands(int64(c.Requests))
	if c.RequestsMin != c.RequestsMax {
		s += fmt.Sprintf(" (%s–%s)", thousands(c.RequestsMin), thousands(c.RequestsMax))
	}
	return s
}

func opsText(c Cell) string {
	if len(c.Ops) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range sortedKeys(c.Ops) {
		if v := c.Ops[name]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", name, thousands(int64(v))))
		}
	}
	if c.Errors > 0 {
		parts = append(parts, fmt.Sprintf("(%d answered ≥ 400, over the runs)", c.Errors))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func notesText(c Cell) string {
	var parts []string
	if c.Tool == ToolSilt {
		parts = append(parts, fmt.Sprintf("own counts = proxy's in %d/%d runs", c.SelfMatched, c.Runs))
	}
	parts = append(parts, c.Notes...)
	return strings.Join(parts, "; ")
}

// thousands formats n with commas: 10,010.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
