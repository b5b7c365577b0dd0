package index

// Range is the half-open interval [Lo, Hi) of keys; Hi == "" is unbounded.
type Range struct{ Lo, Hi string }

// All is the range of every key.
var All = Range{}

// Contains reports whether k lies in r.
func (r Range) Contains(k string) bool { return k >= r.Lo && (r.Hi == "" || k < r.Hi) }

// Overlaps reports whether r and q meet.
func (r Range) Overlaps(q Range) bool {
	return (q.Hi == "" || r.Lo < q.Hi) && (r.Hi == "" || q.Lo < r.Hi)
}

// Covers reports whether r contains all of q.
func (r Range) Covers(q Range) bool {
	return r.Lo <= q.Lo && (r.Hi == "" || (q.Hi != "" && q.Hi <= r.Hi))
}

// Successor returns the least string greater than every string that has
// prefix s ("" when there is none).
func Successor(s string) string {
	b := []byte(s)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return ""
	}
	b[len(b)-1]++
	return string(b)
}

// PrefixRange returns a range holding p and every path below the directory
// p ("" = everything). It may also hold siblings such as "p-b", which
// callers filter with Under.
func PrefixRange(p string) Range {
	if p == "" {
		return All
	}
	return Range{Lo: p, Hi: Successor(p + "/")}
}

// DirRange returns exactly the keys strictly below the directory p.
func DirRange(p string) Range {
	if p == "" {
		return All
	}
	return Range{Lo: p + "/", Hi: Successor(p + "/")}
}

// Cover returns the indexes of the shards of m whose ranges meet the scope
// of paths (files or directories; none or "" means everything): the one
// function that maps paths to shards. Nothing parses a path to guess its
// shard.
func (m *Manifest) Cover(paths ...string) []int {
	rs := make([]Range, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			rs = []Range{All}
			break
		}
		rs = append(rs, PrefixRange(p))
	}
	if len(paths) == 0 {
		rs = []Range{All}
	}
	var out []int
	for i := range m.Shards {
		r := m.Range(i)
		for _, q := range rs {
			if r.Overlaps(q) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// Within reports whether shard i lies wholly inside the scope of paths, so
// reconciling the scope reconciles the whole shard. It uses the exact
// directory interval, not PrefixRange, whose ranges also hold siblings.
func (m *Manifest) Within(i int, paths ...string) bool {
	if len(paths) == 0 {
		return true
	}
	r := m.Range(i)
	for _, p := range paths {
		if p == "" || DirRange(p).Covers(r) {
			return true
		}
	}
	return false
}
