package index

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/siltsync/silt/backend"
)

// ExportReport is what Export wrote.
type ExportReport struct {
	Seq   uint64 `json:"seq"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Export materialises the snapshot's entries under prefix ("" for all) in
// dst at their real paths, for people and tools that browse a bucket by
// path. Every file's bytes are verified against its entry before they are
// written; a path dst cannot hold as a key is an error naming it.
func (s *Snapshot) Export(ctx context.Context, dst backend.Backend, prefix string) (ExportReport, error) {
	rep := ExportReport{Seq: s.Seq()}
	err := s.Walk(ctx, prefix, func(p string, e Entry) error {
		if err := backend.ValidateKey(p); err != nil {
			return fmt.Errorf("export %q: %w", p, err)
		}
		tmp, err := os.CreateTemp("", "silt-export-")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		rc, err := Open(ctx, s.b, p, e)
		if err != nil {
			return err
		}
		_, err = io.Copy(tmp, rc)
		rc.Close()
		if err != nil {
			return err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := dst.Put(ctx, p, tmp, e.Size, backend.Cond{}); err != nil {
			return fmt.Errorf("export %q: %w", p, err)
		}
		rep.Files++
		rep.Bytes += e.Size
		return nil
	})
	return rep, err
}
