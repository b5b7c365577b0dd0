package syncer

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
)

// A record is stored in a binary form (encodeRecord): a record of a
// million-file cache is read on every push, and its JSON form (about 300
// bytes, half-full pages) made the state database 845 MB, most of it
// resident while a push read it. Records of earlier versions are JSON and
// still read (decodeRecord); openState moves them to the binary form once.
//
// The form: recBinary, a flags byte, then varints size, mtime, verified and
// off, then the content's sha256 and the pack's, each either 32 raw bytes
// (recSHARaw, recPackRaw: the lower-case hex silt writes) or a uvarint
// length and the string as it was, then, with recZ, the varints z, zn and
// in (a packed member's frame length, its plain length and the member's
// offset inside it). An
// older silt takes a record with recZ for no record and hashes the file:
// safe.
const recBinary = 0x01

const (
	recHydrated = 1 << iota
	recExec
	recSHARaw
	recPackRaw
	recZ
	recKnown = recHydrated | recExec | recSHARaw | recPackRaw | recZ
)

// encodeRecord gives r's binary form.
func encodeRecord(r fileRecord) []byte {
	var flags byte
	if r.Hydrated {
		flags |= recHydrated
	}
	if r.Exec {
		flags |= recExec
	}
	shaRaw, packRaw := isLowerHex32(r.SHA256), isLowerHex32(r.Pack)
	if shaRaw {
		flags |= recSHARaw
	}
	if packRaw {
		flags |= recPackRaw
	}
	if r.Z != 0 {
		flags |= recZ
	}
	b := make([]byte, 0, 2+4*binary.MaxVarintLen64+64+4)
	b = append(b, recBinary, flags)
	b = binary.AppendVarint(b, r.Size)
	b = binary.AppendVarint(b, r.MtimeNs)
	b = binary.AppendVarint(b, r.VerifiedNs)
	b = binary.AppendVarint(b, r.Off)
	b = appendHexField(b, r.SHA256, shaRaw)
	b = appendHexField(b, r.Pack, packRaw)
	if r.Z != 0 {
		b = binary.AppendVarint(b, r.Z)
		b = binary.AppendVarint(b, r.ZN)
		b = binary.AppendVarint(b, r.In)
	}
	return b
}

func isLowerHex32(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func appendHexField(b []byte, s string, raw bool) []byte {
	if raw {
		b, _ = hex.AppendDecode(b, []byte(s)) // isLowerHex32 checked it
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// binRecord reads the binary form; keepSHA false leaves SHA256 and Pack
// empty and reports only whether SHA256 was set, as decodeRecordFast does.
func binRecord(v []byte, keepSHA bool) (r fileRecord, hasSHA, ok bool) {
	if len(v) < 2 || v[0] != recBinary || v[1]&^recKnown != 0 {
		return r, false, false
	}
	flags, b := v[1], v[2:]
	r.Hydrated, r.Exec = flags&recHydrated != 0, flags&recExec != 0
	for _, f := range []*int64{&r.Size, &r.MtimeNs, &r.VerifiedNs, &r.Off} {
		n, w := binary.Varint(b)
		if w <= 0 {
			return fileRecord{}, false, false
		}
		*f, b = n, b[w:]
	}
	var sha, pack string
	if sha, hasSHA, b, ok = hexField(b, flags&recSHARaw != 0, keepSHA); !ok {
		return fileRecord{}, false, false
	}
	if pack, _, b, ok = hexField(b, flags&recPackRaw != 0, keepSHA); !ok {
		return fileRecord{}, false, false
	}
	if flags&recZ != 0 {
		n, w := binary.Varint(b)
		if w <= 0 || n == 0 {
			return fileRecord{}, false, false
		}
		r.Z, b = n, b[w:]
		for _, f := range []*int64{&r.ZN, &r.In} {
			if n, w = binary.Varint(b); w <= 0 {
				return fileRecord{}, false, false
			}
			*f, b = n, b[w:]
		}
	}
	if len(b) != 0 {
		return fileRecord{}, false, false
	}
	r.SHA256, r.Pack = sha, pack
	return r, hasSHA, true
}

// hexField reads one string of the binary form, rest being what follows.
func hexField(b []byte, raw, keep bool) (s string, set bool, rest []byte, ok bool) {
	if raw {
		if len(b) < 32 {
			return "", false, nil, false
		}
		if keep {
			s = hex.EncodeToString(b[:32])
		}
		return s, true, b[32:], true
	}
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", false, nil, false
	}
	b = b[w:]
	if keep {
		s = string(b[:n])
	}
	return s, n > 0, b[n:], true
}

// decodeRecord reads a record as putFile wrote it, or as an earlier
// version did: the form json.Marshal gives a fileRecord is read directly,
// since a push of a large cache decodes one record per file, and anything
// else (hand-edited states) goes through encoding/json. A record that
// does not decode, or names no content, is not a record: its file is
// verified by hash.
func decodeRecord(v []byte) (fileRecord, bool) {
	if len(v) > 0 && v[0] == recBinary {
		r, hasSHA, ok := binRecord(v, true)
		if !ok || !hasSHA {
			return fileRecord{}, false
		}
		return r, true
	}
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

// decodeRecordFast reads the binary form or the one json.Marshal gives a
// fileRecord; with keepSHA false it leaves SHA256 (and a binary record's
// Pack) empty and only reports whether SHA256 was set (hasSHA), sparing a
// string per unchanged file.
func decodeRecordFast(v []byte, keepSHA bool) (r fileRecord, hasSHA, ok bool) {
	if len(v) > 0 && v[0] == recBinary {
		return binRecord(v, keepSHA)
	}
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
