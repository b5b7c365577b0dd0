package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/siltsync/silt/bench/peers/proxy"
)

// VersitygwVersion is the versitygw release the runner builds when it
// finds none (the one .ci/run tests the S3 backend against).
const VersitygwVersion = "v1.8.0"

// Throwaway credentials of the local server.
const (
	serverAccess = "silt-peers-key"
	serverSecret = "silt-peers-secret"
	serverRegion = "us-east-1"
)

// server is versitygw on 127.0.0.1, storing buckets as directories under
// root, behind the counting proxy.
type server struct {
	root  string
	cmd   *exec.Cmd
	done  chan error
	proxy *proxy.Proxy
	http  *http.Server
	ep    endpoint
}

// findVersitygw returns path if set, else .ci/bin/versitygw under repo,
// else versitygw on PATH, else builds VersitygwVersion into
// repo/.ci/bin with go install.
func findVersitygw(ctx context.Context, path, repo string, logf func(string, ...any)) (string, error) {
	if path != "" {
		return path, nil
	}
	local := filepath.Join(repo, ".ci", "bin", "versitygw")
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	logf("building versitygw %s into %s", VersitygwVersion, filepath.Dir(local))
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/versity/versitygw/cmd/versitygw@"+VersitygwVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(local))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("peers: build versitygw: %w: %s", err, out)
	}
	return local, nil
}

// freePort returns a port nothing listens on at the moment.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts versitygw (binary bin) on a free port with its data
// under root, and the proxy in front of it with delay 0.
func startServer(ctx context.Context, bin, root string) (*server, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := &server{root: root, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "--port", addr, "--access", serverAccess, "--secret", serverSecret, "--quiet", "posix", root)
	var logs strings.Builder
	s.cmd.Stdout, s.cmd.Stderr = &logs, &logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("peers: start versitygw: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := waitListening(ctx, addr, s.done); err != nil {
		s.cmd.Process.Kill()
		return nil, fmt.Errorf("peers: versitygw on %s: %w: %s", addr, err, logs.String())
	}
	s.proxy, err = proxy.New("http://"+addr, 0)
	if err != nil {
		s.stop()
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.stop()
		return nil, err
	}
	s.http = &http.Server{Handler: s.proxy, ReadHeaderTimeout: time.Minute}
	go s.http.Serve(l)
	s.ep = endpoint{url: "http://" + l.Addr().String(), access: serverAccess, secret: serverSecret, region: serverRegion}
	return s, nil
}

// waitListening waits, at most 20 s, until addr accepts connections,
// failing early when the server exits (done).
func waitListening(ctx context.Context, addr string, done <-chan error) error {
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("exited before listening: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return errors.New("not listening after 20 s")
}

// makeBucket creates a bucket. versitygw's posix store keeps a bucket as
// a directory of its root, so this needs no request (and no S3 client).
func (s *server) makeBucket(name string) error {
	return os.MkdirAll(filepath.Join(s.root, name), 0o755)
}

// removePrefix deletes every object under bucket/prefix, directly on the
// server's disk: clean-up between runs, never measured.
func (s *server) removePrefix(bucket, prefix string) error {
	return os.RemoveAll(filepath.Join(s.root, bucket, filepath.FromSlash(prefix)))
}

// stop stops the proxy and the server.
func (s *server) stop() error {
	if s.http != nil {
		s.http.Close()
	}
	select {
	case <-s.done:
		return nil // already exited
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.cmd.Process.Kill()
		<-s.done
	}
	return nil
}
