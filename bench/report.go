package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints results as an aligned table: scenario, entries,
// requests per verb and in total, data puts, wall time over the trials,
// and the process's CPU time per trial (average).
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tentries\tget\tput\tcondput\tlist\tdelete\tstat\ttotal\tdata puts\twall ms min\tavg\tmax\tcpu ms\ttrials\t")
	for _, r := range rs {
		q := r.Requests
		name := r.Name
		if !r.Deterministic {
			name += " (requests varied)"
		}
		if r.Mismatch != "" {
			name += " (count mismatch)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n",
			name, r.Entries, q.Get, q.Put, q.CondPut, q.List, q.Delete, q.Stat, q.Total, r.DataPuts,
			r.WallMin, r.WallAvg, r.WallMax, r.CPUAvg, r.Trials)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Mismatch != "" {
			if _, err := fmt.Fprintf(w, "%s at %d: %s\n", r.Name, r.Entries, r.Mismatch); err != nil {
				return err
			}
		}
		if !r.Deterministic {
			if _, err := fmt.Fprintf(w, "%s at %d: requests per trial %+v\n", r.Name, r.Entries, r.PerTrial); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteJSON prints results as an indented JSON array of Result.
func WriteJSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}
