package syncer

import (
	"encoding/json"
	"math"
	"testing"
)

// The direct reading of a record gives what encoding/json gives, for what
// putFile writes and for forms only encoding/json reads.
func TestDecodeRecord_MatchesEncodingJSON(t *testing.T) {
	sha := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	recs := []fileRecord{
		{Size: 5120, SHA256: sha, MtimeNs: 1764547200123456789, Hydrated: true, VerifiedNs: 1764547300123456789},
		{Size: 0, SHA256: sha, MtimeNs: -1, Hydrated: false, VerifiedNs: 0},
		{Size: math.MaxInt64, SHA256: sha, MtimeNs: math.MinInt64, VerifiedNs: math.MaxInt64},
		{Size: 1, SHA256: ""},
		{Size: 7, SHA256: sha, MtimeNs: 8, Hydrated: true, VerifiedNs: 9, Exec: true}, // the executable bit
	}
	var raws [][]byte
	for _, r := range recs {
		v, _ := json.Marshal(r)
		raws = append(raws, v)
	}
	raws = append(raws,
		[]byte(`{"sha256":"`+sha+`","size":3,"mtime":4,"hydrated":true,"verified":5}`), // other order
		[]byte(` {"size":3,"sha256":"`+sha+`","mtime":4,"hydrated":true,"verified":5}`),
		[]byte(`{"size":3,"sha256":"ABC","mtime":4,"hydrated":true,"verified":5}`),
		[]byte(`{"size":3,"sha256":"`+sha+`","mtime":4,"hydrated":true,"verified":5,"x":1}`),
		[]byte(`{"size":3,"sha256":"`+sha+`","mtime":4,"hydrated":tru`),
		[]byte(`not json`), []byte(``))
	for _, v := range raws {
		var want fileRecord
		wantOK := json.Unmarshal(v, &want) == nil && want.SHA256 != ""
		if !wantOK {
			want = fileRecord{}
		}
		got, ok := decodeRecord(v)
		if got != want || ok != wantOK {
			t.Errorf("decodeRecord(%s) = %+v, %v; encoding/json: %+v, %v", v, got, ok, want, wantOK)
		}
		lf := localFile{exists: true, size: want.Size, mtimeNs: want.MtimeNs}
		fc := &fileCursor{v: v}
		if u := fc.unchanged(lf); u != (wantOK && want.unchanged(lf)) {
			t.Errorf("unchanged(%s) = %v", v, u)
		}
	}
}
