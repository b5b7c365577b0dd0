package lock_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/lock"
)

// TestLock_Acquire_ContentionGoroutines: 8 goroutines, each with its own
// Lock, increment an unprotected counter object 10 times under the lock.
// Every increment must survive, and tokens must rise in the order of the
// critical sections, which is what fencing relies on.
func TestLock_Acquire_ContentionGoroutines(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		const workers, rounds = 8, 10
		ctx := context.Background()
		b := f.new(t)
		var mu sync.Mutex
		tokenAt := map[int]uint64{} // counter value read -> token of the holder that read it
		var wg sync.WaitGroup
		for w := range workers {
			l := newLock(t, b, "ns/.lock", lock.Options{Holder: fmt.Sprint("worker-", w), RetryInterval: time.Millisecond})
			wg.Go(func() {
				for range rounds {
					lease, err := l.Acquire(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					n, incErr := readCounter(ctx, b)
					if incErr == nil {
						_, incErr = backend.PutBytes(ctx, b, "counter", []byte(strconv.Itoa(n+1)), backend.Cond{})
					}
					mu.Lock()
					tokenAt[n] = lease.Token()
					mu.Unlock()
					if err := errors.Join(incErr, lease.Release(ctx)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		n, err := readCounter(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if n != workers*rounds {
			t.Fatalf("counter = %d; want %d (lost updates: the lock let two holders in)", n, workers*rounds)
		}
		checkTokenOrder(t, tokenAt, n)
	})
}

func readCounter(ctx context.Context, b backend.Backend) (int, error) {
	data, _, err := backend.ReadAll(ctx, b, "counter", backend.GetOptions{}, 64)
	if backend.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(data))
}

// checkTokenOrder checks that the holder that saw counter value i had a
// higher token than the one that saw i-1, for every i < n.
func checkTokenOrder(t *testing.T, tokenAt map[int]uint64, n int) {
	t.Helper()
	for i := 1; i < n; i++ {
		if tokenAt[i] <= tokenAt[i-1] {
			t.Fatalf("critical section %d had token %d, section %d had %d: tokens must rise with each holder", i, tokenAt[i], i-1, tokenAt[i-1])
		}
	}
}

// childEnv names the directory a child process works in; see TestMain.
const childEnv = "SILT_LOCK_TEST_CHILD_DIR"

const childRounds = 10

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		if err := childMain(dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childMain is one contending process: acquire, read the counter file,
// write it plus one, log the token, release. The counter and log are plain
// files outside the bucket, so only the lock orders their updates.
func childMain(dir string) error {
	ctx := context.Background()
	b, err := fs.New(filepath.Join(dir, "bucket"))
	if err != nil {
		return err
	}
	l, err := lock.New(b, ".datastore.lock", lock.Options{RetryInterval: 2 * time.Millisecond, MaxWait: 5 * time.Minute})
	if err != nil {
		return err
	}
	counter := filepath.Join(dir, "counter")
	for range childRounds {
		lease, err := l.Acquire(ctx)
		if err != nil {
			return err
		}
		n := 0
		if data, err := os.ReadFile(counter); err == nil {
			if n, err = strconv.Atoi(string(data)); err != nil {
				return fmt.Errorf("counter file %q: %w", data, err)
			}
		} else if !os.IsNotExist(err) {
			return err
		}
		if err := os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o666); err != nil {
			return err
		}
		logf, err := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(logf, "%d %d\n", n, lease.Token())
		if cerr := logf.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := lease.Release(ctx); err != nil {
			return err
		}
	}
	return nil
}

// TestLock_Acquire_ContentionProcesses re-executes the test binary as
// several processes contending for one lock on the fs backend.
func TestLock_Acquire_ContentionProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs = 4
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir)
		out := new(strings.Builder)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", cmd.Process.Pid, err, cmd.Stdout)
		}
	}
	if t.Failed() {
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, "counter"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != strconv.Itoa(procs*childRounds) {
		t.Fatalf("counter = %s; want %d (lost updates across processes)", got, procs*childRounds)
	}
	logData, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	tokenAt := map[int]uint64{}
	lines := strings.Fields(strings.ReplaceAll(string(logData), "\n", " "))
	for i := 0; i+1 < len(lines); i += 2 {
		n, _ := strconv.Atoi(lines[i])
		tok, _ := strconv.ParseUint(lines[i+1], 10, 64)
		tokenAt[n] = tok
	}
	if len(tokenAt) != procs*childRounds {
		t.Fatalf("log has %d distinct counter values; want %d", len(tokenAt), procs*childRounds)
	}
	checkTokenOrder(t, tokenAt, procs*childRounds)
	if last := slices.Max(slices.Collect(maps.Values(tokenAt))); last != procs*childRounds {
		t.Errorf("last token %d; want %d, one per acquisition", last, procs*childRounds)
	}
}
