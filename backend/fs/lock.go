package fs

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
)

// lockShards is the number of lock files. Keys share a lock only by hash
// collision, which costs a little waiting and never correctness.
const lockShards = 256

// locker serialises the writers of a key: every Put and Delete of a key
// holds its shard's lock from the moment it checks the current object
// until its rename, link or unlink is done, so a compare-and-swap cannot be
// overtaken between its check and its rename by any writer, in this
// process or another.
type locker struct {
	dir string // {root}/.silt-fs/locks; lock files are never removed
	// sems stand in front of flock inside one process, so a waiter honours
	// its context and does not pin an OS thread in a blocking syscall.
	sems [lockShards]chan struct{}
}

func newLocker(dir string) *locker {
	l := &locker{dir: dir}
	for i := range l.sems {
		l.sems[i] = make(chan struct{}, 1)
	}
	return l
}

func shardOf(key string) int {
	sum := sha256.Sum256([]byte(key))
	return int(sum[0])
}

// lock takes the exclusive lock of key's shard. The kernel drops a flock
// when its holder dies, so a crashed writer never leaves a key locked.
func (l *locker) lock(ctx context.Context, key string) (unlock func(), err error) {
	shard := shardOf(key)
	select {
	case l.sems[shard] <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := func() { <-l.sems[shard] }
	name := filepath.Join(l.dir, fmt.Sprintf("%02x.lock", shard))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		release()
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		release()
		return nil, fmt.Errorf("flock %s: %w", name, err)
	}
	return func() {
		// Closing the only descriptor of the open file releases the flock.
		f.Close()
		release()
	}, nil
}
