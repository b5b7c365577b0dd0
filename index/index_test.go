package index_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// commit writes a one-shard index holding files (path -> content) at seq,
// with objects and a history copy of the manifest it replaces.
func commit(t *testing.T, b backend.Backend, seq uint64, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	entries := map[string]index.Entry{}
	for p, c := range files {
		entries[p] = index.Entry{Size: int64(len(c)), SHA256: sum(c), Seq: seq}
		if _, err := backend.PutBytes(ctx, b, index.ObjectKey(sum(c)), []byte(c), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	data, id := index.EncodeShard(entries)
	if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), data, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	prev, err := index.ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteHistory(ctx, b, prev); err != nil {
		t.Fatal(err)
	}
	m := &index.Manifest{Format: index.FormatVersion, Seq: seq, Shards: []index.ShardRef{{Lo: "", ID: id, Count: len(entries), Bytes: int64(len(data))}}}
	if _, err := backend.PutBytes(ctx, b, index.ManifestKey, index.EncodeManifest(m), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeManifest_Format1_IsOlderFormat(t *testing.T) {
	_, err := index.DecodeManifest(index.ManifestKey, []byte(`{"format":1,"seq":1,"shards":[]}`))
	if !errors.Is(err, index.ErrOlderFormat) {
		t.Fatalf("err = %v, want ErrOlderFormat", err)
	}
	for _, f := range []int{2, 3, 4, 5, 6} {
		if _, err := index.DecodeManifest(index.ManifestKey, fmt.Appendf(nil, `{"format":%d,"seq":1,"shards":[]}`, f)); err != nil {
			t.Fatalf("format %d: %v, want readable", f, err)
		}
	}
	_, err = index.DecodeManifest(index.ManifestKey, []byte(`{"format":7,"seq":1,"shards":[]}`))
	if !errors.Is(err, index.ErrNewerFormat) {
		t.Fatalf("err = %v, want ErrNewerFormat", err)
	}
}

func TestReadManifest_PastBound_RefusedWithoutReadingIt(t *testing.T) {
	b := mem.New()
	big := append([]byte(`{"format":2,"seq":1,"shards":[],"x":"`), bytes.Repeat([]byte("a"), index.MaxManifestBytes)...)
	if _, err := backend.PutBytes(context.Background(), b, index.ManifestKey, append(big, `"}`...), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, err := index.ReadManifest(context.Background(), b, backend.GetOptions{})
	var fe *index.FormatError
	if !errors.Is(err, index.ErrIndexTooLarge) || !errors.As(err, &fe) || !strings.Contains(fe.Reason, "bytes") {
		t.Fatalf("err = %v, want ErrIndexTooLarge naming the size", err)
	}
}

func TestDecodeShard_EntryOutsideRange_IsCorrupt(t *testing.T) {
	data, id := index.EncodeShard(map[string]index.Entry{"a/x": {Size: 1, SHA256: sum("x")}})
	if _, err := index.DecodeShard(id, index.Range{Lo: "b"}, data); !errors.Is(err, index.ErrCorruptIndex) {
		t.Fatalf("err = %v, want ErrCorruptIndex", err)
	}
	if _, err := index.DecodeShard(id, index.All, data); err != nil {
		t.Fatal(err)
	}
}

func TestValidPath_HostileNames_Refused(t *testing.T) {
	for _, p := range []string{"", "/a", "a//b", "a/./b", "../a", "a/..", "a\x00b", "x/.silt/state.db", ".silt", "\xff", strings.Repeat("a", 256)} {
		if err := index.ValidPath(p); !errors.Is(err, index.ErrInvalidPath) {
			t.Errorf("ValidPath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	for _, p := range []string{"a", "a\\b", "line\nbreak", "a b/c", "data/ü"} {
		if err := index.ValidPath(p); err != nil {
			t.Errorf("ValidPath(%q) = %v", p, err)
		}
	}
}

func TestSnapshot_Check_MissingObject_IsTyped(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "1", "b": "2"})
	ctx := context.Background()
	s, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Check(ctx, true); err != nil || rep.Objects != 2 {
		t.Fatalf("Check = %+v, %v", rep, err)
	}
	if err := b.Delete(ctx, index.ObjectKey(sum("2")), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Check(ctx, false)
	var oe *index.ObjectError
	if !errors.Is(err, index.ErrMissingObject) || !errors.As(err, &oe) || oe.Path != "b" {
		t.Fatalf("err = %v, want ErrMissingObject for b", err)
	}
}

func TestOpen_WrongBytes_IsCorruptObject(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	if _, err := backend.PutBytes(ctx, b, index.ObjectKey(sum("good")), []byte("evil"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	rc, err := index.Open(ctx, b, "p", index.Entry{Size: 4, SHA256: sum("good")})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, index.ErrCorruptObject) {
		t.Fatalf("err = %v, want ErrCorruptObject", err)
	}
}

func TestOpenSnapshotAt_OlderSeq_ReadsHistory(t *testing.T) {
	b := mem.New()
	commit(t, b, 1, map[string]string{"a": "1"})
	commit(t, b, 2, map[string]string{"a": "2"})
	ctx := context.Background()
	s, err := index.OpenSnapshotAt(ctx, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := s.Lookup(ctx, "a")
	if err != nil || !ok || e.SHA256 != sum("1") {
		t.Fatalf("Lookup = %+v %v %v", e, ok, err)
	}
	log, err := index.Log(ctx, b)
	if err != nil || len(log) != 2 || log[0].Seq != 2 || !log[0].Current || log[1].Seq != 1 {
		t.Fatalf("Log = %+v, %v", log, err)
	}
}

// TestGC_ReaderYoungerThanGrace_NeverMissesAnObject: a snapshot that was
// current within the grace period stays whole however many commits follow.
func TestGC_ReaderYoungerThanGrace_NeverMissesAnObject(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	commit(t, b, 1, map[string]string{"a": "v1", "b": "keep"})
	reader, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b, 2, map[string]string{"a": "v2"})
	commit(t, b, 3, map[string]string{"a": "v3"})
	// Objects are old, the snapshots are recent.
	later := func() time.Time { return time.Now().Add(30 * time.Minute) }
	rep, err := index.GC(ctx, b, index.GCOptions{OlderThan: time.Hour, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Data) != 0 {
		t.Fatalf("GC removed %v within the grace period", rep.Data)
	}
	if _, err := reader.Check(ctx, true); err != nil {
		t.Fatalf("reader of seq 1 misses data: %v", err)
	}
	// Past the grace period everything but seq 3 goes.
	rep, err = index.GC(ctx, b, index.GCOptions{OlderThan: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Data) != 3 || len(rep.History) != 2 {
		t.Fatalf("GC past grace: data %v history %v", rep.Data, rep.History)
	}
	cur, _ := index.OpenSnapshot(ctx, b)
	if _, err := cur.Check(ctx, true); err != nil {
		t.Fatal(err)
	}
}

func TestGC_ZeroGrace_KeepsOnlyCurrent(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	commit(t, b, 1, map[string]string{"a": "v1"})
	commit(t, b, 2, map[string]string{"a": "v2"})
	rep, err := index.GC(ctx, b, index.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Data) != 1 || rep.Data[0].Key != index.ObjectKey(sum("v1")) || fmt.Sprint(rep.Roots) != "[2]" {
		t.Fatalf("GC = %+v", rep)
	}
}
