package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
)

// ModelDir is the directory that holds the seeded models: a three-segment
// model type, as hosts lay it out.
const ModelDir = "data/aws/ec2/vpc"

// VersionsPerModel is how many version files each seeded model has, besides
// its latest marker.
const VersionsPerModel = 10

// modelPath is the directory of model id.
func modelPath(id string) string { return ModelDir + "/" + id }

// modelID names the i-th model.
func modelID(i int) string { return fmt.Sprintf("m%05d", i) }

// content returns the bytes of one seeded file: unique to the path, and
// padded to size bytes when size is larger.
func content(p string, size int) []byte {
	b := make([]byte, 0, max(size, len(p)+1))
	b = append(b, p...)
	b = append(b, '\n')
	for len(b) < size {
		b = append(b, "0123456789abcdef"[len(b)%16])
	}
	return b
}

// writeModels writes n files into the cache directory dir: models
// mNNNNN under ModelDir, each with VersionsPerModel files "1.yaml"... and
// a "latest" marker, the last model cut short so there are exactly n. Model
// directories are flat, so n files cost n file creations and n/11
// directory creations; models are written in parallel, since creating a
// file mostly waits on the file system. It returns the model ids.
func writeModels(dir string, n, size int) ([]string, error) {
	per := VersionsPerModel + 1
	models := make([]string, (n+per-1)/per)
	for i := range models {
		models[i] = modelID(i)
	}
	var g errgroup.Group
	g.SetLimit(writers)
	for i, id := range models {
		g.Go(func() error {
			abs := filepath.Join(dir, filepath.FromSlash(modelPath(id)))
			if err := os.MkdirAll(abs, 0o755); err != nil {
				return err
			}
			for v := 1; v <= per && i*per+v <= n; v++ {
				name := strconv.Itoa(v) + ".yaml"
				if v == per {
					name = "latest"
				}
				if err := os.WriteFile(filepath.Join(abs, name), content(modelPath(id)+"/"+name, size), 0o644); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return models, nil
}

// writers bounds the goroutines writeModels creates files with.
const writers = 8

// seed writes n files into c, marks their directory once (a mark costs an
// fsync, so never one per file) and pushes them to the undelayed store.
func seed(ctx context.Context, c *cache, n, size int) ([]string, error) {
	start := time.Now()
	models, err := writeModels(c.dir, n, size)
	if err != nil {
		return nil, fmt.Errorf("bench: seed: %w", err)
	}
	wrote := time.Since(start)
	if err := c.s.MarkDirty(ModelDir); err != nil {
		return nil, fmt.Errorf("bench: seed: %w", err)
	}
	st, err := c.push(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: seed: %w", err)
	}
	if st.Files.Uploaded != n {
		return nil, fmt.Errorf("bench: seed: pushed %d files, want %d", st.Files.Uploaded, n)
	}
	c.w.env.logf("seeded %d entries (%d models) on %s: files %v, push %v", n, len(models), c.w.env.Backend,
		wrote.Round(time.Millisecond), (time.Since(start) - wrote).Round(time.Millisecond))
	return models, nil
}
