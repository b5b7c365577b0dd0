// Package silttest holds the helpers silt's tests share: endpoints that
// misbehave in named ways (a socket that never answers, a port that
// refuses, a scripted S3 error), temp buckets, and waiting for a condition
// without sleeping a fixed time. It imports package testing and is for
// _test files only.
package silttest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// HeldOpen returns the address of a 127.0.0.1 listener that accepts
// connections and never answers, like a store whose process hangs. The
// listener and its connections close with the test.
func HeldOpen(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// RefusedAddr returns a 127.0.0.1 address nothing listens on, so a
// connection to it is refused. (Another process could take the port in
// between; the kernel hands out a fresh ephemeral port each time, which
// makes that unlikely within one test.)
func RefusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// S3Error writes an S3 error response with status and code, as a store
// would send it, for the SDK's own deserialisers to read.
func S3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>scripted</Message><RequestId>req-1</RequestId></Error>`, code)
}

// ResetConnection closes the connection under w without answering, with
// SO_LINGER 0 so the client sees a reset: a proxy in front of the store
// died.
func ResetConnection(t testing.TB, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// TempBucket returns a fresh directory for a file:// bucket, removed with
// the test.
func TempBucket(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bucket")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Until waits for cond to hold, checking it every millisecond, and fails
// the test naming what after timeout. It is for conditions another
// goroutine or process makes true, where no event can be waited on.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}
