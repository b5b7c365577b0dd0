package syncer

import (
	"encoding/json"
	"math"
	"testing"

	"pgregory.net/rapid"
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

// genRecord draws a record: silt's own hex, other strings where a state
// was edited by hand, and every corner of the integers.
func genRecord(rt *rapid.T) fileRecord {
	hexOrNot := func(label string) string {
		switch rapid.IntRange(0, 3).Draw(rt, label+"kind") {
		case 0:
			return ""
		case 1:
			return rapid.StringMatching(`[0-9A-Za-z]{0,70}`).Draw(rt, label)
		default:
			return rapid.StringMatching(`[0-9a-f]{64}`).Draw(rt, label)
		}
	}
	r := fileRecord{
		Size: rapid.Int64().Draw(rt, "size"), SHA256: hexOrNot("sha"),
		MtimeNs: rapid.Int64().Draw(rt, "mtime"), Hydrated: rapid.Bool().Draw(rt, "hydrated"),
		VerifiedNs: rapid.Int64().Draw(rt, "verified"), Exec: rapid.Bool().Draw(rt, "x"),
		Pack: hexOrNot("pack"), Off: rapid.Int64().Draw(rt, "off"), Z: rapid.Int64Range(0, 1<<40).Draw(rt, "z"),
	}
	if r.Z > 0 {
		r.In = rapid.Int64Range(0, 1<<20).Draw(rt, "in")
		r.ZN = rapid.Int64Range(0, 1<<20).Draw(rt, "zn")
	}
	return r
}

// The binary form gives back what was encoded, decodeRecord and the fast
// path of a push agree on it, and it is smaller than the JSON it replaced.
func TestRecord_BinaryRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := genRecord(rt)
		v := encodeRecord(r)
		got, ok := decodeRecord(v)
		if wantOK := r.SHA256 != ""; ok != wantOK || ok && got != r {
			rt.Fatalf("decodeRecord(encodeRecord(%+v)) = %+v, %v", r, got, ok)
		}
		fast, hasSHA, fok := decodeRecordFast(v, false)
		if !fok || hasSHA != (r.SHA256 != "") || fast.SHA256 != "" || fast.Size != r.Size || fast.MtimeNs != r.MtimeNs || fast.VerifiedNs != r.VerifiedNs || fast.Hydrated != r.Hydrated || fast.Exec != r.Exec {
			rt.Fatalf("decodeRecordFast(%+v) = %+v, %v, %v", r, fast, hasSHA, fok)
		}
		lf := localFile{exists: true, size: r.Size, mtimeNs: r.MtimeNs}
		if u := (&fileCursor{v: v}).unchanged(lf); u != (ok && r.unchanged(lf)) {
			rt.Fatalf("unchanged(%+v) = %v", r, u)
		}
		if j, _ := json.Marshal(r); len(v) >= len(j) {
			rt.Fatalf("binary form %d bytes, JSON %d", len(v), len(j))
		}
	})
}

// A damaged binary record (cut short, extended, or with unknown flags) is
// not a record: its file is verified by hash, and nothing panics.
func TestRecord_BinaryDamagedIsNoRecord(t *testing.T) {
	sha := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	v := encodeRecord(fileRecord{Size: 5120, SHA256: sha, MtimeNs: 1, Hydrated: true, VerifiedNs: 3e9, Pack: sha, Off: 77})
	for i := range len(v) {
		if _, ok := decodeRecord(v[:i]); ok {
			t.Errorf("a record cut to %d of %d bytes decoded", i, len(v))
		}
	}
	if _, ok := decodeRecord(append(append([]byte(nil), v...), 0)); ok {
		t.Error("a record with a trailing byte decoded")
	}
	bad := append([]byte(nil), v...)
	bad[1] |= 0x80
	if _, ok := decodeRecord(bad); ok {
		t.Error("a record with an unknown flag decoded")
	}
	rapid.Check(t, func(rt *rapid.T) {
		b := rapid.SliceOf(rapid.Byte()).Draw(rt, "bytes")
		decodeRecord(append([]byte{recBinary}, b...))
		(&fileCursor{v: append([]byte{recBinary}, b...)}).unchanged(localFile{exists: true})
	})
}
