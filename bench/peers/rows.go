package peers

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Row names, in the order they run at each size.
const (
	RowNoopPull       = "noop-pull"
	RowNoopPush       = "noop-push"
	RowPushOneChanged = "push-one-changed"
	RowPullOneChanged = "pull-one-changed"
	RowTouchAllPush   = "touch-all-push"
	RowModelCold      = "model-cold"
	RowModelUnchanged = "model-unchanged"
	RowColdDownload   = "cold-download"
	RowColdUpload     = "cold-upload"
)

// row is one measured operation; do prepares it (unmeasured), measures it
// for one tool in one run, and returns the samples (model-cold also
// measures model-unchanged right after).
type row struct {
	name  string
	desc  string
	large bool // also runs above Config.FullRowsUpTo
	do    func(ctx context.Context, r *runner, st *state, run int, latency time.Duration) ([]Sample, error)
}

// RowInfo names and describes a row, for reports.
type RowInfo struct {
	Name string `json:"name"`
	Desc string `json:"desc"`
}

// Rows lists the rows in the order they run.
func Rows() []RowInfo {
	out := []RowInfo{}
	for _, rw := range rows {
		out = append(out, RowInfo{rw.name, rw.desc})
		if rw.name == RowModelCold {
			out = append(out, RowInfo{RowModelUnchanged, "the same scoped pull again, nothing changed"})
		}
	}
	return out
}

var rows = []row{
	{name: RowNoopPull, desc: "pull into a copy in sync, nothing changed", do: func(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
		return one(r.measure(ctx, st, RowNoopPull, run, lat, st.t.pull(st.main, "", false)))
	}},
	{name: RowNoopPush, desc: "push of a copy in sync, nothing changed (a walk of the whole tree)", large: true, do: func(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
		return one(r.measure(ctx, st, RowNoopPush, run, lat, st.t.push(st.main, false)))
	}},
	{name: RowPushOneChanged, desc: "push after one file of the copy was rewritten (same size)", do: func(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
		p := st.tree.Middle().Files()[FilesPerModel-1] // state/latest
		st.gen++
		if err := WriteFile(st.main.dir, p, Content(p, st.gen), time.Now()); err != nil {
			return nil, err
		}
		return one(r.measure(ctx, st, RowPushOneChanged, run, lat, st.t.push(st.main, false)))
	}},
	{name: RowPullOneChanged, desc: "pull after a peer changed one file (same size) and pushed it", do: pullOneChanged},
	{name: RowTouchAllPush, desc: "push after every file's modification time changed, content unchanged", do: func(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
		now := time.Now()
		for _, m := range st.tree.Models {
			for _, p := range m.Files() {
				if err := os.Chtimes(filepath.Join(st.main.dir, filepath.FromSlash(p)), now, now); err != nil {
					return nil, err
				}
			}
		}
		return one(r.measure(ctx, st, RowTouchAllPush, run, lat, st.t.push(st.main, false)))
	}},
	{name: RowModelCold, desc: "pull of one model (11 files) into an empty copy", do: modelRows},
	{name: RowColdDownload, desc: "pull of the whole tree into an empty copy", do: func(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
		c := st.main
		// The copy stays until the size is done (runSize removes
		// scrDir): deleting 10,000 files right before the next tool's
		// run made that run pay for them, since ext4 skips inodes
		// freed in the last minute or more when it allocates new ones
		// (recently_deleted in find_inode_bit, 60% of the kernel's
		// samples in such a run), and runs got slower one after another.
		c.dir = filepath.Join(st.scrDir, "cold-download-"+strconv.Itoa(run))
		if err := r.bind(ctx, st, c); err != nil {
			return nil, err
		}
		s, err := r.measure(ctx, st, RowColdDownload, run, lat, st.t.pull(c, "", true))
		if err != nil {
			return nil, err
		}
		if n, err := countFiles(c.dir); err != nil {
			return nil, err
		} else if n != st.tree.Files() {
			s.Note = joinNote(s.Note, fmt.Sprintf("%d of %d files downloaded", n, st.tree.Files()))
		}
		return []Sample{s}, nil
	}},
	{name: RowColdUpload, desc: "push of the whole tree from a new copy to an empty prefix", do: func(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
		c := st.main
		c.dir = filepath.Join(st.scrDir, "cold-upload-"+strconv.Itoa(run))
		c.prefix = strings.TrimSuffix(st.main.prefix, "/main") + "/cold-" + strconv.Itoa(run)
		defer os.RemoveAll(c.dir)
		defer r.srv.removePrefix(c.bucket, c.prefix)
		if err := st.tree.Write(c.dir, oldTime()); err != nil {
			return nil, err
		}
		if err := r.bind(ctx, st, c); err != nil {
			return nil, err
		}
		return one(r.measure(ctx, st, RowColdUpload, run, lat, st.t.push(c, true)))
	}},
}

func one(s Sample, err error) ([]Sample, error) {
	if err != nil {
		return nil, err
	}
	return []Sample{s}, nil
}

// bind runs the tool's bind step for c, unmeasured.
func (r *runner) bind(ctx context.Context, st *state, c copyOf) error {
	if st.t.bind == nil {
		return os.MkdirAll(c.dir, 0o755)
	}
	r.srv.proxy.SetDelay(0)
	_, _, err := st.t.bind(c).run(ctx, r.cfg.Timeout)
	return err
}

// pullOneChanged lets the peer copy catch up, change one file and push it,
// unmeasured, then measures the main copy's pull and checks it brought
// the change.
func pullOneChanged(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
	p := st.tree.Middle().Files()[1] // state/1/metadata.yaml
	r.srv.proxy.SetDelay(0)
	if _, _, err := st.t.pull(st.peer, "", false).run(ctx, r.cfg.Timeout); err != nil {
		return nil, fmt.Errorf("peer pull: %w", err)
	}
	st.gen++
	want := Content(p, st.gen)
	if err := WriteFile(st.peer.dir, p, want, time.Now()); err != nil {
		return nil, err
	}
	if _, _, err := st.t.push(st.peer, false).run(ctx, r.cfg.Timeout); err != nil {
		return nil, fmt.Errorf("peer push: %w", err)
	}
	s, err := r.measure(ctx, st, RowPullOneChanged, run, lat, st.t.pull(st.main, "", false))
	if err != nil {
		return nil, err
	}
	got, err := os.ReadFile(filepath.Join(st.main.dir, filepath.FromSlash(p)))
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(got, want) {
		s.Note = joinNote(s.Note, "missed the change")
		s.Missed = true
	}
	return []Sample{s}, nil
}

// modelRows measures a scoped pull of the middle model into an empty
// copy, then the same pull again.
func modelRows(ctx context.Context, r *runner, st *state, run int, lat time.Duration) ([]Sample, error) {
	m := st.tree.Middle()
	c := st.main
	c.dir = filepath.Join(st.scrDir, "model-"+strconv.Itoa(run))
	defer os.RemoveAll(c.dir)
	if err := r.bind(ctx, st, c); err != nil {
		return nil, err
	}
	cold, err := r.measure(ctx, st, RowModelCold, run, lat, st.t.pull(c, m.Dir(), true))
	if err != nil {
		return nil, err
	}
	if n, err := countFiles(filepath.Join(c.dir, filepath.FromSlash(m.Dir()))); err != nil {
		return nil, err
	} else if n != FilesPerModel {
		cold.Note = joinNote(cold.Note, fmt.Sprintf("%d of %d files downloaded", n, FilesPerModel))
	}
	again, err := r.measure(ctx, st, RowModelUnchanged, run, lat, st.t.pull(c, m.Dir(), false))
	if err != nil {
		return nil, err
	}
	return []Sample{cold, again}, nil
}

// countFiles counts the regular files under dir, leaving out tools' own
// state (silt's .silt directory).
func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".silt" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n, err
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
