package seal

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/siltsync/silt/backend"
)

// kind is how one key's bytes are stored.
type kind int

const (
	// kindSealed: the whole object sealed (AEAD) under the ring's current
	// data key, bound to its plain key.
	kindSealed kind = iota
	// kindContent: a content-named object (objects/, packs/), XORed with
	// its name's keystream, byte for byte, so ranges read as they are.
	kindContent
	// kindRaw: the key files and the config under .silt/keys/, stored as
	// they are: they are what unlocks the ring.
	kindRaw
)

const (
	internalDir = ".silt"
	// KeysPrefix holds the key files and the config; it is the one part
	// of an encrypted bucket stored as it is.
	KeysPrefix = internalDir + "/keys/"
	// sealedMark begins a sealed path segment; it is not a hex digit, a
	// decimal digit or a letter, so no name of the layout begins with it.
	sealedMark = "~"
)

// areas are the names of the layout under .silt that a bucket shows as
// they are: they say what kind of object a key holds, which the layout
// says of every bucket anyway.
var areas = map[string]bool{
	"objects": true, "packs": true, "shards": true, "pages": true,
	"log": true, "checkpoints": true, "manifests": true, "manifest.json": true,
	"namespaces": true, "control": true, "locks": true, "tmp": true,
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// hideHex maps the hex id h through the ring's id permutation (reveal:
// its inverse).
func (s *Store) hideHex(h string, reveal bool) string {
	raw, err := hex.DecodeString(h)
	if err != nil {
		panic("seal: hideHex of non-hex " + h) // callers check isHex
	}
	var out []byte
	if reveal {
		out, err = s.ring.RevealID(raw)
	} else {
		out, err = s.ring.HideID(raw)
	}
	if err != nil {
		panic(err) // 16 or 32 bytes: callers check isHex
	}
	return hex.EncodeToString(out)
}

func (s *Store) sealSeg(seg string) string { return sealedMark + s.ring.SealName(seg) }

// stored maps a plain key to the key it is stored under, and says how its
// bytes are stored. Path names (namespaces, control keys, lock names,
// anything outside the layout) are sealed segment by segment; content
// hashes are hidden by a keyed permutation of the same length; sequence
// numbers and the layout's own names stay as they are, so the log's
// listings and its order work unchanged and a reader of the bucket
// learns counts, not names.
func (s *Store) stored(key string) (string, kind) {
	segs := strings.Split(key, "/")
	if len(segs) >= 2 && segs[0] == internalDir && segs[1] == "keys" {
		return key, kindRaw
	}
	out := make([]string, len(segs))
	d := -1
	for i, seg := range segs {
		if seg == internalDir {
			d = i
			break
		}
		out[i] = s.sealSeg(seg)
	}
	if d < 0 {
		return strings.Join(out, "/"), kindSealed
	}
	out[d] = internalDir
	k := kindSealed
	rest := segs[d+1:]
	if len(rest) > 0 && areas[rest[0]] {
		out[d+1] = rest[0]
		area, tail := rest[0], rest[1:]
		switch {
		case (area == "objects" || area == "packs") && len(tail) == 2 && isHex(tail[1], 64) && tail[0] == tail[1][:2]:
			h := s.hideHex(tail[1], false)
			out[d+2], out[d+3] = h[:2], h
			return strings.Join(out, "/"), kindContent
		case (area == "shards" || area == "pages") && len(tail) == 1 && isHex(strings.TrimSuffix(tail[0], ".json"), 32) && strings.HasSuffix(tail[0], ".json"):
			out[d+2] = s.hideHex(strings.TrimSuffix(tail[0], ".json"), false) + ".json"
			return strings.Join(out, "/"), k
		case (area == "log" || area == "checkpoints" || area == "manifests") && len(tail) == 1 && isDigits(strings.TrimSuffix(tail[0], ".json")):
			out[d+2] = tail[0]
			return strings.Join(out, "/"), k
		}
		for i, seg := range tail {
			out[d+2+i] = s.sealSeg(seg)
		}
		return strings.Join(out, "/"), k
	}
	for i, seg := range rest {
		out[d+1+i] = s.sealSeg(seg)
	}
	return strings.Join(out, "/"), k
}

// plain inverts stored: the plain key of a stored one and how its bytes
// are stored, or false for a key this ring did not write (a foreign
// object, another ring's, junk).
func (s *Store) plain(storedKey string) (string, kind, bool) {
	segs := strings.Split(storedKey, "/")
	if len(segs) >= 2 && segs[0] == internalDir && segs[1] == "keys" {
		return storedKey, kindRaw, true
	}
	out := make([]string, len(segs))
	d := -1
	for i, seg := range segs {
		if seg == internalDir && d < 0 {
			d = i
			out[i] = seg
			continue
		}
		if d >= 0 && i == d+1 && areas[seg] {
			out[i] = seg
			continue
		}
		if t, ok := strings.CutPrefix(seg, sealedMark); ok {
			p, err := s.ring.OpenName(t)
			if err != nil {
				return "", 0, false
			}
			out[i] = p
			continue
		}
		out[i] = seg // a hidden id or a sequence number: mended below
	}
	if d >= 0 && len(segs) > d+1 {
		area, tail := segs[d+1], out[d+2:]
		switch {
		case (area == "objects" || area == "packs") && len(tail) == 2 && isHex(segs[d+3], 64):
			h := s.hideHex(segs[d+3], true)
			out[d+2], out[d+3] = h[:2], h
		case (area == "shards" || area == "pages") && len(tail) == 1 && isHex(strings.TrimSuffix(segs[d+2], ".json"), 32):
			out[d+2] = s.hideHex(strings.TrimSuffix(segs[d+2], ".json"), true) + ".json"
		}
	}
	p := strings.Join(out, "/")
	// The inverse must map back: a stored key any other way (a sealed
	// segment where the layout has a hash, say) is not one this ring
	// wrote.
	back, k := s.stored(p)
	if back != storedKey || backend.ValidateKey(p) != nil {
		return "", 0, false
	}
	return p, k, true
}

// storedPrefix returns the stored prefix to list for the plain prefix: the
// longest run of whole segments that maps on its own (the prefix itself
// when its last segment is empty or, under log/, checkpoints/ and
// manifests/, digits). The listing is then filtered by the plain prefix.
func (s *Store) storedPrefix(prefix string) string {
	dir, last := "", prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir, last = prefix[:i+1], prefix[i+1:]
	}
	segs := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	if dir == "" {
		segs = nil
	}
	if len(segs) >= 2 && segs[0] == internalDir && segs[1] == "keys" {
		return prefix
	}
	var out []string
	d := -1
	for i, seg := range segs {
		switch {
		case seg == internalDir && d < 0:
			d = i
			out = append(out, seg)
		case d >= 0 && i == d+1 && areas[seg]:
			out = append(out, seg)
		case d >= 0 && i >= d+2 && len(segs) > d+1 && (segs[d+1] == "objects" || segs[d+1] == "packs" || segs[d+1] == "shards" || segs[d+1] == "pages" || segs[d+1] == "log" || segs[d+1] == "checkpoints" || segs[d+1] == "manifests"):
			// Under a hashed area a directory does not map alone: list the
			// area and filter.
			return strings.Join(out, "/") + "/"
		default:
			out = append(out, s.sealSeg(seg))
		}
	}
	base := ""
	if len(out) > 0 {
		base = strings.Join(out, "/") + "/"
	}
	if last == "" {
		return base
	}
	if d >= 0 && len(segs) == d+2 && (segs[d+1] == "log" || segs[d+1] == "checkpoints" || segs[d+1] == "manifests") && isDigits(strings.TrimSuffix(last, ".json")) {
		return base + last
	}
	return base
}

// checkLen refuses a key too long once stored, naming the plain key.
func checkLen(key, storedKey string) error {
	if len(storedKey) > backend.MaxKeyLen {
		return &backend.KeyError{Key: key, Reason: fmt.Sprintf("longer than %d bytes once its names are sealed (%d)", backend.MaxKeyLen, len(storedKey))}
	}
	return nil
}
