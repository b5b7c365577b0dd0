package bench

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// envSecondProcess runs the issue-20 figure: a second silt process's
// scoped pull of one model beside the first process's push of another, on
// file://, each a real `silt` process as users run them.
const envSecondProcess = "SILT_BENCH_SECOND_PROCESS"

// The owner of a cache serves it while it runs, so a second CLI process's
// scoped pull goes through the owner and runs beside the owner's push of
// another model instead of waiting for it. Timed: the pull alone and
// during the push, process start to exit, the median of each. Run it on an
// otherwise idle machine: SILT_BENCH_SECOND_PROCESS=1 go test -run
// TestSecondProcess -v ./bench/.
func TestSecondProcess_ScopedPullBesidePush(t *testing.T) {
	if os.Getenv(envSecondProcess) == "" {
		t.Skip("timing figure; set " + envSecondProcess + "=1")
	}
	bin := filepath.Join(t.TempDir(), "silt")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/siltsync/silt/cmd/silt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("file", func(t *testing.T) {
		secondProcess(t, bin, "file://"+filepath.Join(t.TempDir(), "bucket"), nil, 150, 2<<20)
	})
	for _, link := range []struct {
		name string
		rate float64 // bytes per second shared by every request body; 0 = unpaced
	}{{"s3", 0}, {"s3-50MiBps", 50 << 20}} {
		t.Run(link.name, func(t *testing.T) {
			// gofakes3 in this process, 30 ms per request: a remote store,
			// where a push waits on the network rather than the disk; the
			// paced one also shares 50 MiB/s among all request bodies, an
			// uplink that the push fills.
			mem := s3mem.New()
			if err := mem.CreateBucket("silt"); err != nil {
				t.Fatal(err)
			}
			h := gofakes3.New(mem).Server()
			var mu sync.Mutex
			var free time.Time // when the shared link is next idle
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(30 * time.Millisecond)
				if link.rate > 0 && r.ContentLength > 0 {
					mu.Lock()
					start := time.Now()
					if free.After(start) {
						start = free
					}
					free = start.Add(time.Duration(float64(r.ContentLength) / link.rate * float64(time.Second)))
					until := free
					mu.Unlock()
					time.Sleep(time.Until(until))
				}
				h.ServeHTTP(w, r)
			}))
			defer srv.Close()
			env := []string{"AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench", "AWS_CONFIG_FILE=/dev/null",
				"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
			secondProcess(t, bin, "s3://silt?endpoint="+srv.URL+"&use_path_style=true&region=us-east-1&conditional_delete=false", env, 150, 1<<20+1<<18)
		})
	}
}

// secondProcess measures one store: files of fileSize in the pushed model.
func secondProcess(t *testing.T, bin, url string, env []string, files, fileSize int) {
	const trials = 7
	tmp := t.TempDir()
	silt := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), env...)
		return cmd
	}
	run := func(args ...string) time.Duration {
		t.Helper()
		start := time.Now()
		if out, err := silt(args...).CombinedOutput(); err != nil {
			t.Fatalf("silt %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return time.Since(start)
	}
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	run("init", "--dir", a, url)
	run("init", "--dir", b, url)
	put := func(dir, p string, data []byte) {
		t.Helper()
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, fileSize)
	rand.Read(big)
	// m2 changes before every pull, so each one downloads a file.
	step := 0
	changeM2 := func() {
		step++
		put(b, "data/t/m2/x", fmt.Appendf(nil, "version %d", step))
		run("push", "--dir", b)
	}
	// m1 is rewritten before every push, so each one uploads it all.
	rewriteM1 := func() {
		for i := range files {
			copy(big, fmt.Sprintf("%08d-%08d", step, i))
			put(a, fmt.Sprintf("data/t/m1/f%03d", i), big)
		}
	}
	changeM2()
	run("pull", "--dir", a)
	pull := []string{"pull", "--dir", a, "--scope", "data/t/m2"}

	var alone, during []time.Duration
	var pushes []time.Duration
	for range trials {
		changeM2()
		alone = append(alone, run(pull...))
	}
	overlapped := 0
	for range trials {
		changeM2()
		rewriteM1()
		push := silt("push", "--dir", a, "-v")
		stderr, err := push.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		var rest bytes.Buffer
		start := time.Now()
		if err := push.Start(); err != nil {
			t.Fatal(err)
		}
		// The first per-file line: the push holds the cache, serves it,
		// and is uploading.
		lines := bufio.NewScanner(stderr)
		for lines.Scan() && !strings.HasPrefix(lines.Text(), "upload") {
			rest.WriteString(lines.Text() + "\n")
		}
		done := make(chan error, 1)
		go func() {
			for lines.Scan() {
			}
			done <- push.Wait()
		}()
		d := run(pull...)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("push: %v\n%s", err, rest.String())
			}
		default:
			overlapped++
			during = append(during, d)
			if err := <-done; err != nil {
				t.Fatalf("push: %v\n%s", err, rest.String())
			}
		}
		pushes = append(pushes, time.Since(start))
	}
	if overlapped == 0 {
		t.Fatalf("no pull ran while the push did (pushes took %v): make the push longer", pushes)
	}
	med := func(ds []time.Duration) time.Duration { s := slices.Clone(ds); slices.Sort(s); return s[len(s)/2] }
	ratio := float64(med(during)) / float64(med(alone))
	t.Logf("second process on %s: push of %d files of %d KiB took median %v; scoped pull (1 file downloaded) alone median %.0f ms, beside the push median %.0f ms (%.2fx; target <= 1.5x); %d of %d pulls overlapped the push",
		strings.TrimPrefix(t.Name(), "TestSecondProcess_ScopedPullBesidePush/"), files, fileSize>>10, med(pushes).Round(time.Millisecond), ms(med(alone)), ms(med(during)), ratio, overlapped, trials)
	t.Logf("alone %v; during %v", alone, during)
}
