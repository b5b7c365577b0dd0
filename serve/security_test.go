//go:build unix

package serve

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/siltsync/silt/backend/mem"
)

// longDir is a cache directory whose DIR/.silt/serve.sock is past the
// socket path limit.
func longDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSocketPath_LongDir_GoesToThePrivateRuntimeDir(t *testing.T) {
	rt := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	dir := longDir(t)
	p, err := SocketPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != filepath.Join(rt, "silt") {
		t.Fatalf("socket %s, want it in %s/silt", p, rt)
	}
	ln, err := Listen(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Stat(filepath.Join(rt, "silt"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("runtime dir: %v %v, want mode 0700", fi.Mode(), err)
	}
}

func TestSocketPath_NoRuntimeDir_UsesAPerUserTempDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p, err := SocketPath(longDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tmp, "silt-"+strconv.Itoa(os.Getuid())); filepath.Dir(p) != want {
		t.Fatalf("socket %s, want it in %s", p, want)
	}
}

// A runtime directory others may enter (another user made it, or left it
// open) is never listened in.
func TestListen_RuntimeDirOpenToOthers_IsRefused(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	shared := filepath.Join(tmp, "silt-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(t.Context(), longDir(t)); !errors.Is(err, ErrForeignSocket) {
		t.Fatalf("Listen in a 0777 runtime dir: %v, want ErrForeignSocket", err)
	}
}

// The socket is bound inside a private directory and renamed into place:
// with a umask that leaves everything open, it is still 0600 and nothing
// is left beside it.
func TestListen_PermissiveUmask_SocketIsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	ln, err := Listen(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p, _ := SocketPath(dir)
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("socket: %v %v, want a 0600 socket", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".s") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	ln.Close()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v, want it removed", err)
	}
}

// A client never takes answers from a process of another user: SO_PEERCRED
// tells it who answers (here the test plays a client of another uid).
func TestClient_PeerOfAnotherUser_IsRefused(t *testing.T) {
	st := start(t, mem.New())
	p, _ := SocketPath(st.dir)
	defer func(f func() int) { clientUID = f }(clientUID)
	clientUID = func() int { return os.Getuid() + 1 }
	_, err := NewUnixClient(p).Info(t.Context())
	if peerSupported() && !errors.Is(err, ErrForeignSocket) {
		t.Fatalf("Info from another user's service: %v, want ErrForeignSocket", err)
	}
}

// A socket file another user owns is refused before dialing: Dial checks
// the owner (the check on OSes without peer credentials).
func TestDial_SocketOfAnotherUser_IsRefused(t *testing.T) {
	st := start(t, mem.New())
	p, _ := SocketPath(st.dir)
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func() int) { clientUID = f }(clientUID)
	clientUID = func() int { return os.Getuid() + 1 }
	if err := checkSocketFile(p, fi); !errors.Is(err, ErrForeignSocket) {
		t.Fatalf("socket owned by uid %d checked as uid %d: %v, want ErrForeignSocket", os.Getuid(), clientUID(), err)
	}
}

// The service closes a connection from another user unanswered.
func TestServe_ConnectionFromAnotherUser_IsClosed(t *testing.T) {
	if !peerSupported() {
		t.Skip("no peer credentials on this OS")
	}
	dir := t.TempDir()
	ln, err := Listen(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	pl := &peerListener{Listener: ln, uid: os.Getuid() + 1}
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go srv.Serve(pl)
	defer srv.Close()
	p, _ := SocketPath(dir)
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /v1/info HTTP/1.1\r\nHost: silt\r\n\r\n")); err != nil {
		return // closed before the write: refused
	}
	buf := make([]byte, 64)
	if n, err := c.Read(buf); err == nil {
		t.Fatalf("another user's connection was answered: %q", buf[:n])
	}
}

func TestReadTokenFile_OpenToOthers_IsRefused(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(testToken+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(f); !errors.Is(err, ErrWeakToken) {
		t.Fatalf("0644 token file: %v, want ErrWeakToken", err)
	}
	if err := os.Chmod(f, 0o400); err != nil {
		t.Fatal(err)
	}
	if tok, err := ReadTokenFile(f); err != nil || tok != testToken {
		t.Fatalf("0400 token file: %q %v", tok, err)
	}
}

func TestReadTokenFile_ShortToken_IsRefused(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(f); !errors.Is(err, ErrWeakToken) {
		t.Fatalf("3-character token: %v, want ErrWeakToken", err)
	}
}

func TestServer_Serve_TCPShortTokenIsRefused(t *testing.T) {
	srv, err := Open(t.Context(), Config{Syncer: newSyncerConfig(t), Token: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := srv.Serve(ln); !errors.Is(err, ErrWeakToken) {
		t.Fatalf("serve with a 3-character token: %v, want ErrWeakToken", err)
	}
}

// rawPost sends body as is and returns the reply's status and error code.
func rawPost(t *testing.T, st *started, path, body string) (int, string) {
	t.Helper()
	p, _ := SocketPath(st.dir)
	c := NewUnixClient(p)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://silt"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb errorBody
	_ = jsonDecode(resp, &eb)
	code := ""
	if eb.Error != nil {
		code = eb.Error.Code
	}
	return resp.StatusCode, code
}

func TestServer_Request_BodyOverLimit_Is413(t *testing.T) {
	defer func(n int64) { maxBody = n }(maxBody)
	maxBody = 1 << 10
	st := start(t, mem.New())
	body := `{"scope":["` + strings.Repeat("a", 2<<10) + `"]}`
	if status, code := rawPost(t, st, "/v1/pull", body); status != http.StatusRequestEntityTooLarge || code != CodeTooLarge {
		t.Fatalf("body over the limit: %d %s, want 413 %s", status, code, CodeTooLarge)
	}
	// Valid JSON within the limit followed by more past it is refused too.
	body = `{}` + strings.Repeat(" ", 2<<10) + `{}`
	if status, _ := rawPost(t, st, "/v1/pull", body); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("JSON then data past the limit: %d, want 413", status)
	}
}

func TestServer_Request_TrailingData_Is400(t *testing.T) {
	st := start(t, mem.New())
	for _, body := range []string{`{} {}`, `{"scope":[]}x`, `{}]`} {
		if status, code := rawPost(t, st, "/v1/pull", body); status != http.StatusBadRequest || code != CodeBadRequest {
			t.Errorf("%q: %d %s, want 400 bad_request", body, status, code)
		}
	}
	if status, _ := rawPost(t, st, "/v1/status", "{}\n"); status != http.StatusOK {
		t.Errorf("one value and a newline: %d, want 200", status)
	}
}

// Every bad key is a 400: control keys and prefixes, lock keys, fences.
func TestServer_BadKeys_Are400(t *testing.T) {
	st := start(t, mem.New())
	for _, c := range []struct{ path, body string }{
		{"/v1/control/list", `{"prefix":"../"}`},
		{"/v1/control/list", `{"prefix":"a/../../b/"}`},
		{"/v1/control/list", `{"key":"runs/1"}`},
		{"/v1/control/get", `{"key":"../x"}`},
		{"/v1/control/put", `{"key":"","data":"aGk="}`},
		{"/v1/lock/acquire", `{"key":"../k"}`},
		{"/v1/lock/inspect", `{"key":"/abs"}`},
		{"/v1/push", `{"fence":{"key":"../k","token":1}}`},
		{"/v1/pull", `{"lazy":["[bad"]}`},
		{"/v1/resolve", `{"paths":["x"],"keep":"theirs"}`},
	} {
		if status, code := rawPost(t, st, c.path, c.body); status != http.StatusBadRequest || code != CodeBadRequest {
			t.Errorf("%s %s: %d %s, want 400 bad_request", c.path, c.body, status, code)
		}
	}
}

func TestServer_Lock_TTLOverBound_Is400(t *testing.T) {
	st := start(t, mem.New())
	years246 := int64(246 * 365 * 24 * 3600 * 1000)
	for _, body := range []string{
		`{"key":"k","ttlMs":` + strconv.FormatInt(years246, 10) + `}`,
		`{"key":"k","ttlMs":` + strconv.FormatInt(MaxLockTTL.Milliseconds()+1, 10) + `}`,
		`{"key":"k","maxWaitMs":` + strconv.FormatInt(MaxLockWait.Milliseconds()+1, 10) + `}`,
	} {
		if status, code := rawPost(t, st, "/v1/lock/acquire", body); status != http.StatusBadRequest || code != CodeBadRequest {
			t.Errorf("%s: %d %s, want 400 bad_request", body, status, code)
		}
	}
	if status, _ := rawPost(t, st, "/v1/lock/acquire", `{"key":"k","ttlMs":60000}`); status != http.StatusOK {
		t.Errorf("a one-minute TTL: %d, want 200", status)
	}
}

// peerSupported says whether this OS tells a socket's peer (SO_PEERCRED).
func peerSupported() bool { return runtime.GOOS == "linux" }
