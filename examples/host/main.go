// Command host shows how a program that keeps its state in a directory
// embeds silt, the way workflow engines drive a datastore: for each step it
// takes the model's lock, pulls only that model, does its work, marks what
// it wrote, uploads outside the global lock and commits under it with the
// lock's fencing token. Two "machines" share one file:// bucket.
//
//	go run ./examples/host
package main

import (
	"context"
	"fmt"
	"github.com/siltsync/silt/index"
	"log"
	"os"
	"path/filepath"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/fs" // registers file://
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/syncer"
)

func main() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "silt-host-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	store, err := backend.Open(ctx, "file://"+filepath.Join(tmp, "bucket"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	a := openMachine(ctx, store, filepath.Join(tmp, "machine-a"))
	b := openMachine(ctx, store, filepath.Join(tmp, "machine-b"))
	defer a.Close()
	defer b.Close()

	must(step(ctx, store, a, "aws/ec2/vpc", "vpc-1", "cidr: 10.0.0.0/16"))
	must(step(ctx, store, b, "aws/ec2/subnet", "subnet-1", "vpc: vpc-1"))
	// Machine b reads the vpc model written by a: a scoped pull fetches it.
	must(step(ctx, store, b, "aws/ec2/vpc", "vpc-1", "cidr: 10.1.0.0/16"))
	must(step(ctx, store, a, "aws/ec2/vpc", "vpc-1", "cidr: 10.2.0.0/16"))
}

func openMachine(ctx context.Context, store backend.Backend, dir string) *syncer.Syncer {
	s, err := syncer.Open(ctx, syncer.Config{Backend: store, Dir: dir, Namespace: "repo", Owner: "example-repo"})
	if err != nil {
		log.Fatal(err)
	}
	return s
}

// step runs one workflow step on one model: lock, scoped pull, write, mark,
// prepare outside the global lock, commit under it.
func step(ctx context.Context, store backend.Backend, s *syncer.Syncer, typ, id, content string) error {
	modelDir := fmt.Sprintf("data/%s/%s", typ, id)
	modelLock, err := lock.New(store, "repo/"+index.LockKey(typ+"/"+id), lock.Options{})
	if err != nil {
		return err
	}
	_, err = lock.WithLock(ctx, modelLock, func(ctx context.Context, _ *lock.Lease) (struct{}, error) {
		pulled, err := s.Pull(ctx, syncer.PullOptions{Scope: []string{modelDir}})
		if err != nil {
			return struct{}{}, err
		}
		version := pulled.Files.Downloaded + pulled.Files.Unchanged + 1
		path := fmt.Sprintf("%s/state/%d/raw", modelDir, version)
		if err := s.MarkDirty(modelDir + "/state"); err != nil { // before the write, as hosts do
			return struct{}{}, err
		}
		if err := write(s, path, content); err != nil {
			return struct{}{}, err
		}
		pm, prepared, err := s.PreparePush(ctx, syncer.PushOptions{})
		if err != nil {
			return struct{}{}, err
		}
		global, err := lock.New(store, "repo/"+index.LockKey("global"), lock.Options{})
		if err != nil {
			return struct{}{}, err
		}
		committed, err := lock.WithLock(ctx, global, func(ctx context.Context, lease *lock.Lease) (syncer.Stats, error) {
			return s.CommitPush(ctx, pm, &syncer.Fence{Key: "repo/" + index.LockKey("global"), Token: lease.Token()})
		})
		if err != nil {
			return struct{}{}, err
		}
		fmt.Printf("%-16s pull: %d down, %d requests | prepare: %d up | commit: seq %d, %d requests\n",
			typ+"/"+id, pulled.Files.Downloaded, total(pulled), prepared.Files.Uploaded, committed.Seq, total(committed))
		return struct{}{}, nil
	})
	return err
}

// write stands in for the host's own write into its state directory.
func write(s *syncer.Syncer, path, content string) error {
	abs := filepath.Join(s.Root(), filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	return os.WriteFile(abs, []byte(content), 0o644)
}

func total(st syncer.Stats) int64 {
	r := st.Requests
	return r.Get + r.Put + r.List + r.Delete + r.Stat
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
