package index

import (
	"bytes"
	"unicode/utf8"
)

// decodeShardFast reads a shard in the form encodeShard writes it
// (json.Marshal of a shardFile: no spaces, map keys sorted, the fields of
// Entry in their order, omitted when empty as tagged) without
// reflection: every pull decodes the shards it reconciles, and
// encoding/json was a fifth of the CPU of a host's step. ok false means
// the bytes are not exactly that form (another writer's encoder, escapes
// in a path, duplicate keys, a number encoding/json would refuse), and
// DecodeShard reads them with encoding/json, which accepts any JSON. What
// this accepts, encoding/json decodes to the same shardFile
// (TestDecodeShardFast_AgreesWithEncodingJSON).
func decodeShardFast(data []byte) (f shardFile, ok bool) {
	s := scan{b: data, ok: true}
	s.lit(`{"format":`)
	f.Format = int(s.int())
	s.lit(`,"entries":{`)
	f.Entries = map[string]Entry{}
	var last []byte
	for first := true; s.ok && !s.peek('}'); first = false {
		if !first {
			s.lit(`,`)
		}
		k := s.key()
		if !s.ok || last != nil && bytes.Compare(k, last) <= 0 {
			return shardFile{}, false // unsorted or repeated: leave it to encoding/json
		}
		last = k
		var e Entry
		s.lit(`:{"size":`)
		e.Size = s.int()
		s.lit(`,"sha256":"`)
		e.SHA256 = s.hex()
		s.lit(`","seq":`)
		e.Seq = s.uint()
		if s.opt(`,"pack":"`) {
			e.Pack = s.hex()
			s.lit(`"`)
		}
		if s.opt(`,"off":`) {
			e.Off = s.int()
		}
		if s.opt(`,"x":true`) {
			e.Exec = true
		}
		if s.opt(`,"z":`) {
			e.Z = s.int()
		}
		if s.opt(`,"zn":`) {
			e.ZN = s.int()
		}
		if s.opt(`,"in":`) {
			e.In = s.int()
		}
		s.lit(`}`)
		f.Entries[string(k)] = e
	}
	s.lit(`}`)
	if s.opt(`,"salt":"`) {
		f.Salt = s.hex()
		s.lit(`"`)
	}
	s.lit(`}`)
	if !s.ok || len(s.b) != 0 {
		return shardFile{}, false
	}
	return f, true
}

// scan reads literals, numbers and strings of one JSON form in order; any
// mismatch clears ok, and every later read is then a no-op.
type scan struct {
	b  []byte
	ok bool
}

func (s *scan) peek(c byte) bool { return s.ok && len(s.b) > 0 && s.b[0] == c }

// opt consumes l when it comes next.
func (s *scan) opt(l string) bool {
	if s.ok && bytes.HasPrefix(s.b, []byte(l)) {
		s.b = s.b[len(l):]
		return true
	}
	return false
}

func (s *scan) lit(l string) {
	if !s.opt(l) {
		s.ok = false
	}
}

// digits consumes a JSON integer's digits (no leading zero but "0") and
// returns them; a fraction or exponent after them is left to encoding/json.
func (s *scan) digits() []byte {
	i := 0
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		i++
	}
	if !s.ok || i == 0 || i > 18 || i > 1 && s.b[0] == '0' || i < len(s.b) && (s.b[i] == '.' || s.b[i] == 'e' || s.b[i] == 'E') {
		s.ok = false
		return nil
	}
	d := s.b[:i]
	s.b = s.b[i:]
	return d
}

func (s *scan) uint() uint64 {
	var n uint64
	for _, c := range s.digits() {
		n = n*10 + uint64(c-'0')
	}
	return n
}

func (s *scan) int() int64 {
	neg := s.opt("-")
	n := int64(s.uint()) // at most 18 digits: no overflow
	if neg {
		return -n
	}
	return n
}

// hex consumes lower-case hex digits up to the closing quote, which it
// leaves; anything else in the string is left to encoding/json.
func (s *scan) hex() string {
	i := 0
	for i < len(s.b) && (s.b[i] >= '0' && s.b[i] <= '9' || s.b[i] >= 'a' && s.b[i] <= 'f') {
		i++
	}
	if !s.ok || i == len(s.b) || s.b[i] != '"' {
		s.ok = false
		return ""
	}
	h := string(s.b[:i])
	s.b = s.b[i:]
	return h
}

// key consumes a quoted object key with no escapes, control characters or
// invalid UTF-8 (which encoding/json would rewrite), and returns its bytes.
func (s *scan) key() []byte {
	s.lit(`"`)
	i := 0
	for i < len(s.b) && s.b[i] != '"' && s.b[i] != '\\' && s.b[i] >= 0x20 {
		i++
	}
	if !s.ok || i == len(s.b) || s.b[i] != '"' || !utf8.Valid(s.b[:i]) {
		s.ok = false
		return nil
	}
	k := s.b[:i]
	s.b = s.b[i+1:]
	return k
}
