package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/siltsync/silt/internal/legacy"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// bucket is one shared store, counted, and checked for consistency when
// the test ends.
type bucket struct {
	t     *testing.T
	store backend.Backend
}

func newBucket(t *testing.T, nb Factory) *bucket {
	t.Helper()
	return newBucketOn(t, nb(t))
}

func newBucketOn(t *testing.T, store backend.Backend) *bucket {
	bk := &bucket{t: t, store: store}
	t.Cleanup(func() { CheckRemote(t, store, "") })
	return bk
}

// CheckRemote is the remote-consistency check run after every syncer
// scenario: the manifest of namespace ns ("" for none) parses, every shard
// exists and matches its hash, range and count, and every entry's object
// exists and hashes to the entry's sha256 (format 2: committed data is
// immutable, so this holds at every moment, even mid-push).
func CheckRemote(t *testing.T, b backend.Backend, ns string) {
	t.Helper()
	checkRemoteData(t, b, ns, true)
}

// checkIndex checks the index and that every object exists with its size.
func checkIndex(t *testing.T, b backend.Backend) {
	t.Helper()
	checkRemoteData(t, b, "", false)
}

func checkRemoteData(t *testing.T, b backend.Backend, ns string, data bool) {
	t.Helper()
	if ns != "" {
		b = backend.Prefixed(b, ns)
	}
	snap, err := index.OpenSnapshot(context.Background(), b)
	if err != nil {
		t.Errorf("remote check: %v", err)
		return
	}
	if _, err := snap.Check(context.Background(), data); err != nil {
		t.Errorf("remote check: %v", err)
	}
}

// host is one machine: a cache directory bound to the bucket.
type host struct {
	t   *testing.T
	bk  *bucket
	dir string
	cfg syncer.Config
	s   *syncer.Syncer
	// made remembers directories write created, so seeding 50k files does
	// not cost 50k MkdirAll calls.
	made map[string]bool
}

func (bk *bucket) host(opts ...func(*syncer.Config)) *host {
	bk.t.Helper()
	h := &host{t: bk.t, bk: bk, dir: bk.t.TempDir()}
	h.cfg = syncer.Config{Backend: bk.store, Dir: h.dir, Concurrency: 4, Lazy: serve.DefaultLazy}
	for _, o := range opts {
		o(&h.cfg)
	}
	h.open()
	bk.t.Cleanup(func() { h.s.Close() })
	return h
}

// legacyPush commits files (path -> content; "" removes the path) as an
// older silt writing format (3 or 4) does, through the frozen writer of
// internal/legacy: the way tests get a bucket, and peers, of a format
// this silt no longer writes.
func (bk *bucket) legacyPush(format int, files map[string]string) uint64 {
	bk.t.Helper()
	fs := map[string][]byte{}
	for p, c := range files {
		fs[p] = nil
		if c != "" {
			fs[p] = []byte(c)
		}
	}
	seq, err := legacy.Push(context.Background(), bk.store, format, fs)
	if err != nil {
		bk.t.Fatalf("legacy push (format %d): %v", format, err)
	}
	return seq
}

// isCommitPoint matches the write that commits a seq in any format: the
// manifest's compare-and-swap (format 3) or a log entry's create.
func isCommitPoint(v wrap.Verb, key string) bool {
	return v == wrap.VerbCondPut && (key == index.ManifestKey || strings.HasPrefix(key, index.LogPrefix))
}

func withShardMax(n int) func(*syncer.Config) {
	return func(c *syncer.Config) { c.ShardMaxEntries = n }
}

func (h *host) open() {
	h.t.Helper()
	s, err := syncer.Open(context.Background(), h.cfg)
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	h.s = s
}

// restart closes the syncer and opens a new one on the same directory: a
// new process as far as silt can tell.
func (h *host) restart() {
	h.t.Helper()
	if err := h.s.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
}

func (h *host) root() string {
	if h.cfg.Namespace != "" {
		return filepath.Join(h.dir, h.cfg.Namespace)
	}
	return h.dir
}

func (h *host) write(p, content string) {
	h.t.Helper()
	abs := filepath.Join(h.root(), filepath.FromSlash(p))
	if dir := filepath.Dir(abs); !h.made[dir] {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			h.t.Fatal(err)
		}
		if h.made == nil {
			h.made = map[string]bool{}
		}
		h.made[dir] = true
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) read(p string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(h.root(), filepath.FromSlash(p)))
	if err != nil {
		return "", false
	}
	return string(data), true
}

func (h *host) remove(p string) {
	h.t.Helper()
	h.made = nil // silt may prune directories a removal emptied
	if err := os.RemoveAll(filepath.Join(h.root(), filepath.FromSlash(p))); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) mark(paths ...string) {
	h.t.Helper()
	for _, p := range paths {
		if err := h.s.MarkDirty(p); err != nil {
			h.t.Fatalf("mark %s: %v", p, err)
		}
	}
}

// writeMark writes files and marks each dirty.
func (h *host) writeMark(files map[string]string) {
	h.t.Helper()
	for p, c := range files {
		h.write(p, c)
		h.mark(p)
	}
}

func (h *host) push() syncer.Stats {
	h.t.Helper()
	st, err := h.s.Push(context.Background(), syncer.PushOptions{})
	if err != nil {
		h.t.Fatalf("push: %v", err)
	}
	return st
}

func (h *host) pull(scope ...string) syncer.Stats {
	h.t.Helper()
	st, err := h.s.Pull(context.Background(), syncer.PullOptions{Scope: scope})
	if err != nil {
		h.t.Fatalf("pull %v: %v", scope, err)
	}
	return st
}

// counted swaps the host's backend for a counting wrapper over the same
// store, so a test can see exactly what the next operations send.
func (h *host) counted() *wrap.Counting {
	h.t.Helper()
	c := wrap.Count(h.bk.store)
	h.s.Close()
	h.cfg.Backend = c
	h.open()
	return c
}

// dataPuts returns the data object keys written in log.
func dataPuts(log []wrap.Request) []string {
	var out []string
	for _, r := range log {
		if (r.Verb == wrap.VerbPut || r.Verb == wrap.VerbCondPut) && strings.HasPrefix(r.Key, index.ObjectsPrefix) {
			out = append(out, r.Key)
		}
	}
	return out
}

// objKey names the data object holding content.
func objKey(content string) string {
	sum := sha256.Sum256([]byte(content))
	return index.ObjectKey(hex.EncodeToString(sum[:]))
}

// committed reports whether the current snapshot has an entry at p.
func (bk *bucket) committed(p string) bool {
	bk.t.Helper()
	snap, err := index.OpenSnapshot(context.Background(), bk.store)
	if err != nil {
		bk.t.Fatal(err)
	}
	_, ok, err := snap.Lookup(context.Background(), p)
	if err != nil {
		bk.t.Fatal(err)
	}
	return ok
}

// keysRead returns the keys fetched with GET.
func keysRead(log []wrap.Request) []string {
	var out []string
	for _, r := range log {
		if r.Verb == wrap.VerbGet {
			out = append(out, r.Key)
		}
	}
	return out
}

// modelFiles returns n files of one model: versioned data plus a latest
// marker, in the layout hosts use.
func modelFiles(typ, id string, n int) map[string]string {
	files := map[string]string{}
	for v := 1; v <= n; v++ {
		files[fmt.Sprintf("data/%s/%s/state/%d/raw", typ, id, v)] = fmt.Sprintf("%s %s v%d", typ, id, v)
	}
	files[fmt.Sprintf("data/%s/%s/state/latest", typ, id)] = fmt.Sprint(n)
	return files
}

func mustEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
