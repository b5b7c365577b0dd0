package index_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/frame"
)

// The executable bit is the optional entry field "x": written only when
// set, so a plain entry's bytes are what they were, and read back.
func TestEncodeShard_ExecField_OptionalAndRoundTrips(t *testing.T) {
	stored, id := index.EncodeShard(map[string]index.Entry{
		"run.sh": {Size: 1, SHA256: sum("x"), Seq: 1, Exec: true},
		"plain":  {Size: 1, SHA256: sum("p"), Seq: 1},
	})
	data, _, err := frame.Decode(stored, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(data, []byte(`"x":true`)) != 1 || bytes.Contains(data, []byte(`"x":false`)) {
		t.Fatalf("shard bytes %s", data)
	}
	// The frame as format 6 stores it, and its plain bytes as format 5
	// stored them, decode alike.
	for _, b := range [][]byte{stored, data} {
		got, err := index.DecodeShard(id, index.All, b)
		if err != nil {
			t.Fatal(err)
		}
		if !got["run.sh"].Exec || got["plain"].Exec {
			t.Errorf("decoded %+v", got)
		}
	}
}

// A format-3 reader that predates "x" decodes its entries the same way as
// one that knows it: unknown entry fields are ignored (FORMAT.md,
// "Versioning"), so "x" needs no new format.
func TestDecodeShard_UnknownEntryField_Ignored(t *testing.T) {
	raw := map[string]any{"format": 3, "entries": map[string]any{
		"a": map[string]any{"size": 1, "sha256": sum("a"), "seq": 2, "x": true, "later": "field"},
	}}
	data, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := index.DecodeShard(index.ShardID(data), index.All, data)
	if err != nil {
		t.Fatal(err)
	}
	if e := got["a"]; e.Size != 1 || e.Seq != 2 || !e.Exec {
		t.Errorf("decoded %+v", e)
	}
}
