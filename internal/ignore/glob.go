package ignore

import (
	"unicode"
	"unicode/utf8"
)

// One segment of a pattern (no "/") against one path segment, as git's
// wildmatch does with WM_PATHNAME: "*" is any run of characters, "?" one
// character (a UTF-8 character, where git counts bytes), "[...]" one
// character of a class ("!" or "^" first negates it, "a-z" is a range,
// "]" first is literal, "[:alpha:]" and the other POSIX classes), and a
// backslash makes the next character literal.

// checkSegment says why a segment is not a valid pattern ("" when it is).
func checkSegment(pat string) string {
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			if i+1 == len(pat) {
				return "ends with a lone backslash"
			}
			i++
		case '[':
			_, next, why := class(pat, i+1, 0)
			if why != "" {
				return why
			}
			i = next - 1
		}
	}
	return ""
}

// matchSegment reports whether name matches the segment pattern pat,
// which checkSegment accepted.
func matchSegment(pat, name string) bool {
	// Backtracking over the last "*" only, as every glob matcher does:
	// a later star subsumes what an earlier one would retry.
	px, nx := 0, 0
	starP, starN := -1, -1
	for px < len(pat) || nx < len(name) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				for px < len(pat) && pat[px] == '*' {
					px++
				}
				starP, starN = px, nx
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					ok, next, _ := class(pat, px+1, r)
					if ok {
						px = next
						nx += w
						continue
					}
				}
			default:
				lit := c
				step := 1
				if c == '\\' && px+1 < len(pat) {
					lit, step = pat[px+1], 2
				}
				if nx < len(name) && name[nx] == lit {
					px += step
					nx++
					continue
				}
			}
		}
		if starP < 0 || starN >= len(name) {
			return false
		}
		_, w := utf8.DecodeRuneInString(name[starN:])
		starN += w
		px, nx = starP, starN
	}
	return true
}

// class reads the bracket expression whose body starts at pat[i] (just
// past "[") and reports whether c is in it, the index just past its "]",
// and why it does not parse ("" when it does).
func class(pat string, i int, c rune) (in bool, next int, why string) {
	negate := false
	if i < len(pat) && (pat[i] == '!' || pat[i] == '^') {
		negate = true
		i++
	}
	first := true
	for {
		if i >= len(pat) {
			return false, i, "unclosed \"[\""
		}
		b := pat[i]
		if b == ']' && !first {
			return in != negate, i + 1, ""
		}
		first = false
		if b == '[' && i+1 < len(pat) && pat[i+1] == ':' {
			end := indexFrom(pat, i+2, ":]")
			if end < 0 {
				return false, i, "unclosed \"[:\""
			}
			fn, ok := posixClasses[pat[i+2:end]]
			if !ok {
				return false, i, "unknown character class [:" + pat[i+2:end] + ":]"
			}
			if fn(c) {
				in = true
			}
			i = end + 2
			continue
		}
		lo, w, why := classChar(pat, i)
		if why != "" {
			return false, i, why
		}
		i += w
		hi := lo
		if i+1 < len(pat) && pat[i] == '-' && pat[i+1] != ']' {
			var w2 int
			hi, w2, why = classChar(pat, i+1)
			if why != "" {
				return false, i, why
			}
			i += 1 + w2
		}
		if lo <= c && c <= hi {
			in = true
		}
	}
}

// classChar reads one (maybe escaped) character of a bracket expression.
func classChar(pat string, i int) (rune, int, string) {
	if pat[i] == '\\' {
		if i+1 >= len(pat) {
			return 0, 0, "ends with a lone backslash"
		}
		r, w := utf8.DecodeRuneInString(pat[i+1:])
		return r, 1 + w, ""
	}
	r, w := utf8.DecodeRuneInString(pat[i:])
	return r, w, ""
}

func indexFrom(s string, i int, sub string) int {
	for j := i; j+len(sub) <= len(s); j++ {
		if s[j:j+len(sub)] == sub {
			return j
		}
	}
	return -1
}

// posixClasses are the classes git's wildmatch knows.
var posixClasses = map[string]func(rune) bool{
	"alnum":  func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
	"alpha":  unicode.IsLetter,
	"blank":  func(r rune) bool { return r == ' ' || r == '\t' },
	"cntrl":  unicode.IsControl,
	"digit":  func(r rune) bool { return '0' <= r && r <= '9' },
	"graph":  func(r rune) bool { return unicode.IsGraphic(r) && !unicode.IsSpace(r) },
	"lower":  unicode.IsLower,
	"print":  unicode.IsPrint,
	"punct":  unicode.IsPunct,
	"space":  unicode.IsSpace,
	"upper":  unicode.IsUpper,
	"xdigit": func(r rune) bool { return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F' },
}
