package peers

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
)

// FileSize is the size of every generated file, as in the reference
// benchmark's seed data.
const FileSize = 5 << 10

// VersionsPerModel is how many version directories ({n}/raw and
// {n}/metadata.yaml) each generated model has, besides its latest marker.
const VersionsPerModel = 5

// FilesPerModel is how many files one generated model holds.
const FilesPerModel = 2*VersionsPerModel + 1

// modelTypes are the model types generated models cycle through: two-,
// three- and four-segment types, as hosts normalise them (the wrong-shard
// bug of the reference showed only on types of three segments or more).
var modelTypes = []string{
	"command/shell",
	"aws/ec2/vpc",
	"@test/aws/ec2/subnet",
	"docker/run",
	"@test/aws/ec2",
	"gcp/compute/network/firewall",
}

// Model is one generated model: its files live under Dir.
type Model struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Dir is the model's directory, relative to the tree's root.
func (m Model) Dir() string { return "data/" + m.Type + "/" + m.ID }

// Files returns the model's files, relative to the tree's root: for each
// version n, state/{n}/raw and state/{n}/metadata.yaml, then the
// state/latest marker.
func (m Model) Files() []string {
	out := make([]string, 0, FilesPerModel)
	for n := 1; n <= VersionsPerModel; n++ {
		v := m.Dir() + "/state/" + strconv.Itoa(n)
		out = append(out, v+"/raw", v+"/metadata.yaml")
	}
	return append(out, m.Dir()+"/state/latest")
}

// Tree is a namespace of generated models in the host layout
// (data/{type}/{id}/{name}/{n}/{raw,metadata.yaml} and
// data/{type}/{id}/{name}/latest). The same size always gives the same
// tree, byte for byte.
type Tree struct {
	Models []Model `json:"models"`
}

// NewTree returns the tree of at least files files: whole models, so
// 1,000 gives 1,001 files, 10,000 gives 10,010 and 100,000 gives 100,001.
func NewTree(files int) Tree {
	n := max(1, (files+FilesPerModel-1)/FilesPerModel)
	t := Tree{Models: make([]Model, n)}
	for i := range t.Models {
		t.Models[i] = Model{Type: modelTypes[i%len(modelTypes)], ID: modelUUID(i)}
	}
	return t
}

// modelUUID derives a UUID-shaped id from i, so ids look like hosts' and
// sort in no particular relation to i.
func modelUUID(i int) string {
	s := sha256.Sum256([]byte("silt-peers-model-" + strconv.Itoa(i)))
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// Files is the number of files in the tree.
func (t Tree) Files() int { return len(t.Models) * FilesPerModel }

// Middle is the model in the middle of the namespace: the one the rows
// that touch a single model use.
func (t Tree) Middle() Model { return t.Models[len(t.Models)/2] }

// Content returns the bytes of path at generation gen: FileSize bytes,
// unique to the path and the generation, so that no tool can skip a
// change by size and no store can deduplicate two files.
func Content(path string, gen int) []byte {
	b := make([]byte, 0, FileSize)
	b = fmt.Appendf(b, "%s generation %d\n", path, gen)
	h := sha256.Sum256(b)
	for len(b) < FileSize {
		h = sha256.Sum256(h[:])
		for _, c := range h {
			if len(b) == FileSize {
				break
			}
			b = append(b, "0123456789abcdef"[c&15])
		}
	}
	return b
}

// writers bounds the goroutines Write creates files with.
const writers = 8

// Write writes the tree at generation 0 into dir, which must not hold
// other files of the tree. Every file gets the modification time mtime,
// so that copies written at different times do not differ in it.
func (t Tree) Write(dir string, mtime time.Time) error {
	var g errgroup.Group
	g.SetLimit(writers)
	for _, m := range t.Models {
		g.Go(func() error {
			for _, p := range m.Files() {
				if err := WriteFile(dir, p, Content(p, 0), mtime); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("peers: write tree: %w", err)
	}
	return nil
}

// WriteFile writes data to dir/p, creating directories as needed, and
// sets its modification time to mtime.
func WriteFile(dir, p string, data []byte, mtime time.Time) error {
	abs := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(abs, data, 0o644); err != nil {
		return err
	}
	return os.Chtimes(abs, mtime, mtime)
}
