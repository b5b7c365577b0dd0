package syncer

import (
	"bytes"
	"encoding/json"
	"math"
)

// decodeRecord reads a record as putFile wrote it. encoding/json would do,
// but a push of a large cache decodes one record per file, so the form
// json.Marshal gives a fileRecord is read directly, and anything else
// (older or hand-edited states) goes through encoding/json. A record that
// does not decode, or names no content, is not a record: its file is
// verified by hash.
func decodeRecord(v []byte) (fileRecord, bool) {
	if r, hasSHA, ok := decodeRecordFast(v, true); ok {
		if !hasSHA {
			return fileRecord{}, false
		}
		return r, true
	}
	var r fileRecord
	if json.Unmarshal(v, &r) != nil || r.SHA256 == "" {
		return fileRecord{}, false
	}
	return r, true
}

// recordScan reads the fields of json.Marshal(fileRecord) in their order.
type recordScan struct {
	b  []byte
	ok bool
}

func (s *recordScan) lit(l string) {
	if s.ok && bytes.HasPrefix(s.b, []byte(l)) {
		s.b = s.b[len(l):]
		return
	}
	s.ok = false
}

func (s *recordScan) int() int64 {
	b, i, neg := s.b, 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	start := i
	var n int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n > (math.MaxInt64-9)/10 {
			s.ok = false // large enough to leave to encoding/json
			return 0
		}
		n = n*10 + int64(b[i]-'0')
	}
	if i == start {
		s.ok = false
		return 0
	}
	s.b = b[i:]
	if neg {
		return -n
	}
	return n
}

// hex skips a run of lower-case hex digits, returning it when keep is
// set, and reports whether the run was not empty.
func (s *recordScan) hex(keep bool) (string, bool) {
	i := 0
	for i < len(s.b) && (s.b[i] >= '0' && s.b[i] <= '9' || s.b[i] >= 'a' && s.b[i] <= 'f') {
		i++
	}
	if !s.ok || i == len(s.b) || s.b[i] != '"' {
		s.ok = false
		return "", false
	}
	var h string
	if keep {
		h = string(s.b[:i])
	}
	s.b = s.b[i:]
	return h, i > 0
}

func (s *recordScan) bool() bool {
	switch {
	case s.ok && bytes.HasPrefix(s.b, []byte("true")):
		s.b = s.b[4:]
		return true
	case s.ok && bytes.HasPrefix(s.b, []byte("false")):
		s.b = s.b[5:]
		return false
	}
	s.ok = false
	return false
}

// decodeRecordFast reads the form json.Marshal gives a fileRecord; with
// keepSHA false it leaves SHA256 empty and only reports whether it was
// set (hasSHA), sparing a string per unchanged file.
func decodeRecordFast(v []byte, keepSHA bool) (r fileRecord, hasSHA, ok bool) {
	s := recordScan{b: v, ok: true}
	s.lit(`{"size":`)
	r.Size = s.int()
	s.lit(`,"sha256":"`)
	r.SHA256, hasSHA = s.hex(keepSHA)
	s.lit(`","mtime":`)
	r.MtimeNs = s.int()
	s.lit(`,"hydrated":`)
	r.Hydrated = s.bool()
	s.lit(`,"verified":`)
	r.VerifiedNs = s.int()
	if s.ok && bytes.HasPrefix(s.b, []byte(`,"x":true`)) {
		s.b = s.b[len(`,"x":true`):]
		r.Exec = true
	}
	s.lit(`}`)
	return r, hasSHA, s.ok && len(s.b) == 0
}
