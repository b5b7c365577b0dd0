package fs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
)

// The cross-process tests re-run this test binary as child processes,
// selected by these variables. Children and parent talk in lines: a child
// says "ready" and waits for "go" on stdin, so all of them race from the
// same moment without the parent sleeping.
const (
	childModeEnv = "SILT_FS_CHILD"
	childDirEnv  = "SILT_FS_DIR"

	processes     = 8
	casIncrements = 25
	createRounds  = 10
)

// TestChildProcess is the body of a child process; run directly it skips.
func TestChildProcess(t *testing.T) {
	mode := os.Getenv(childModeEnv)
	if mode == "" {
		t.Skip("helper for the cross-process tests; runs only as their child")
	}
	b, err := fs.New(os.Getenv(childDirEnv))
	if err != nil {
		t.Fatal(err)
	}
	in := bufio.NewScanner(os.Stdin)
	waitGo := func() {
		fmt.Println("ready")
		if !in.Scan() || in.Text() != "go" {
			t.Fatalf("child: want go, got %q (%v)", in.Text(), in.Err())
		}
	}
	ctx := context.Background()
	switch mode {
	case "cas":
		waitGo()
		conflicts := 0
		for done := 0; done < casIncrements; {
			data, info, err := backend.ReadAll(ctx, b, "counter", backend.GetOptions{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(string(data))
			if err != nil {
				t.Fatal(err)
			}
			_, err = backend.PutBytes(ctx, b, "counter", []byte(strconv.Itoa(n+1)), backend.Cond{IfMatch: info.Version})
			switch {
			case backend.IsPrecondition(err):
				conflicts++
			case err != nil:
				t.Fatal(err)
			default:
				done++
			}
		}
		fmt.Println("result", conflicts)
	case "create":
		for round := range createRounds {
			waitGo()
			key := fmt.Sprintf("race/%d", round)
			_, err := backend.PutBytes(ctx, b, key, []byte(strconv.Itoa(os.Getpid())), backend.Cond{IfAbsent: true})
			switch {
			case backend.IsPrecondition(err):
				fmt.Println("result lost")
			case err != nil:
				t.Fatal(err)
			default:
				fmt.Println("result won", os.Getpid())
			}
		}
	case "stall":
		// An upload whose body never ends, for a parent to kill.
		_, err := b.Put(ctx, "stalled", &stallReader{}, 1<<20, backend.Cond{})
		t.Fatalf("stalled Put returned: %v", err)
	default:
		t.Fatalf("unknown child mode %q", mode)
	}
}

type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr bytes.Buffer
}

func startChildren(t *testing.T, mode, dir string) []*child {
	t.Helper()
	var children []*child
	for range processes {
		children = append(children, startChild(t, mode, dir))
	}
	return children
}

func startChild(t *testing.T, mode, dir string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")}
	c.cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childDirEnv+"="+dir)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdout = bufio.NewScanner(out)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.stdin.Close()
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// expect reads the child's output up to a line starting with prefix (the
// test framework prints lines of its own) and returns the rest of it.
func (c *child) expect(t *testing.T, prefix string) string {
	t.Helper()
	for c.stdout.Scan() {
		if rest, ok := strings.CutPrefix(c.stdout.Text(), prefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	c.cmd.Wait()
	t.Fatalf("child %d ended before %q; stderr:\n%s", c.cmd.Process.Pid, prefix, c.stderr.String())
	return ""
}

// startRace waits until every child is ready, then releases them together.
func startRace(t *testing.T, children []*child) {
	t.Helper()
	for _, c := range children {
		c.expect(t, "ready")
	}
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func waitChildren(t *testing.T, children []*child) {
	t.Helper()
	for _, c := range children {
		c.stdin.Close()
		io.Copy(io.Discard, c.cmd.Stdout.(io.Reader))
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v; stderr:\n%s", c.cmd.Process.Pid, err, c.stderr.String())
		}
	}
}

func TestBackend_Put_IfMatchAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	b, dir := newBackend(t)
	put(t, b, "counter", "0")
	children := startChildren(t, "cas", dir)
	startRace(t, children)
	conflicts := 0
	for _, c := range children {
		n, err := strconv.Atoi(c.expect(t, "result"))
		if err != nil {
			t.Fatal(err)
		}
		conflicts += n
	}
	waitChildren(t, children)
	want := strconv.Itoa(processes * casIncrements)
	if got, _ := get(t, b, "counter"); got != want {
		t.Errorf("counter = %s after %d processes x %d increments (%d conflicts), want %s: updates were lost",
			got, processes, casIncrements, conflicts, want)
	}
	t.Logf("%d conflicts retried", conflicts)
}

func TestBackend_Put_IfAbsentAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	b, dir := newBackend(t)
	children := startChildren(t, "create", dir)
	for round := range createRounds {
		startRace(t, children)
		var winners []string
		for _, c := range children {
			if r := c.expect(t, "result"); r != "lost" {
				winners = append(winners, strings.TrimPrefix(r, "won "))
			}
		}
		if len(winners) != 1 {
			t.Errorf("round %d: %d winners %v, want exactly 1", round, len(winners), winners)
			continue
		}
		if got, _ := get(t, b, fmt.Sprintf("race/%d", round)); got != winners[0] {
			t.Errorf("round %d: object holds %q, but the winner was %s", round, got, winners[0])
		}
	}
	waitChildren(t, children)
}
