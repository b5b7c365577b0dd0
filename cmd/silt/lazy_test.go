package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPull_LazyGlob_StatusCountsAndSyncKeepsThemLazy(t *testing.T) {
	_, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "models/m/weights.bin", "big")
	write(t, a, "models/m/deep/more.bin", "bigger")
	write(t, a, "models/m/config.yaml", "small")
	ok(t, "push", "--dir", a)
	r := ok(t, "pull", "--dir", b, "--lazy", "**/*.bin", "-v")
	if !strings.Contains(r.stderr, "lazy     models/m/weights.bin (3 B)\n") {
		t.Errorf("pull --lazy -v does not report the lazy file:\n%s", r.stderr)
	}
	if got := read(t, b, "models/m/config.yaml"); got != "small" {
		t.Errorf("config.yaml = %q", got)
	}
	absent := func(p string) bool {
		_, err := os.Stat(filepath.Join(b, filepath.FromSlash(p)))
		return os.IsNotExist(err)
	}
	if !absent("models/m/weights.bin") || !absent("models/m/deep/more.bin") {
		t.Fatal("pull --lazy downloaded a matching file")
	}
	if s := ok(t, "status", "--dir", b, "--offline").stdout; !strings.Contains(s, "lazy: 2 files recorded without their bytes") {
		t.Errorf("status does not count the lazy files:\n%s", s)
	}
	ok(t, "sync", "--dir", b)
	if !absent("models/m/weights.bin") {
		t.Error("sync hydrated a lazy file")
	}
	if v := object(t, ok(t, "status", "--dir", b, "--offline", "--json")); num(v, "status", "lazy") != 2 {
		t.Errorf("status --json lazy = %v after sync, want 2", v["status"])
	}
	ok(t, "hydrate", "--dir", b, "models/m")
	if got := read(t, b, "models/m/deep/more.bin"); got != "bigger" {
		t.Errorf("hydrate DIR: more.bin = %q", got)
	}
	wantCode(t, silt(t, "pull", "--dir", b, "--lazy", "[bad"), 2, "pull --lazy [bad")
}

func TestPush_Lock_HonoursAHeldLockAndCommitsUnderIt(t *testing.T) {
	u, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "x", "x")
	// Held by another (acquired by URL, not by this cache: a push under the
	// cache's own lease is TestNewcomer_PushLockUnderOwnLease).
	held := object(t, ok(t, "lock", "acquire", "--url", u, "--json", "deploy"))
	r := silt(t, "push", "--dir", a, "--lock", "deploy")
	wantCode(t, r, 3, "push --lock while another holds it")
	if ls := object(t, ok(t, "ls", "--json", u)); num(ls, "count") != 0 {
		t.Fatalf("a push refused by the lock committed %v files", ls["count"])
	}
	ok(t, "push", "--dir", a) // without --lock, the lock is ignored, as documented
	ok(t, "lock", "release", "--url", u, "--nonce", held["nonce"].(string), "deploy")
	write(t, a, "y", "y")
	ok(t, "push", "--dir", a, "--lock", "deploy")
	if in := object(t, ok(t, "lock", "inspect", "--dir", a, "--json", "deploy")); in["held"] != false {
		t.Errorf("push --lock left the lock held: %v", in)
	}
	if v := object(t, ok(t, "lock", "acquire", "--dir", a, "--json", "deploy")); v["token"] != 3.0 {
		t.Errorf("token after push --lock = %v, want 3 (the push held token 2)", v["token"])
	}
	if h := ok(t, "lock", "--help").stdout; !strings.Contains(h, "other commands ignore it unless told to use it") {
		t.Errorf("lock --help:\n%s", h)
	}
}
