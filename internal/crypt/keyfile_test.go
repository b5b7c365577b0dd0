package crypt_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/internal/crypt"
)

var pass = []byte("correct horse battery staple")

func wrap(t testing.TB, ring *crypt.Keyring, passphrase string) *crypt.KeyFile {
	t.Helper()
	k, err := crypt.Wrap(ring, []byte(passphrase), crypt.TestKDFParams, "host-a/alice")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A key file stores and loads, and opens to the ring it wrapped: every
// generation, the name key, the current generation.
func TestKeyFile_RoundTrip(t *testing.T) {
	ring := newRing(t)
	ring.Rotate()
	g1, old := ring.Seal(nil, []byte("one"), ad)
	ring.Rotate()
	k := wrap(t, ring, string(pass))
	if k.Version != 1 || k.KDF != "argon2id" || len(k.Salt) != 16 || len(k.ID) != 16 || k.Label != "host-a/alice" {
		t.Fatalf("key file %+v", k)
	}
	if k.Created.Location() != time.UTC || time.Since(k.Created) > time.Minute || k.Created.Nanosecond() != 0 {
		t.Fatalf("created %v: want now, UTC, to the second", k.Created)
	}
	stored := crypt.EncodeKeyFile(k)
	for _, want := range []string{`"version": 1`, `"kdf": "argon2id"`, `"id": "` + k.ID + `"`, `"memory_kib": 64`, `"label": "host-a/alice"`, `"created": "` + k.Created.Format(time.RFC3339) + `"`} {
		if !bytes.Contains(stored, []byte(want)) {
			t.Fatalf("stored file lacks %s:\n%s", want, stored)
		}
	}
	loaded, err := crypt.DecodeKeyFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(crypt.EncodeKeyFile(loaded), stored) {
		t.Fatalf("re-encoded differs:\n%s\n%s", crypt.EncodeKeyFile(loaded), stored)
	}
	got, err := loaded.Unwrap(pass)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Generations(), []uint16{1, 2, 3}) || got.Current() != 3 {
		t.Fatalf("unwrapped %v", got)
	}
	if p, err := got.Open(nil, g1, old, ad); err != nil || string(p) != "one" {
		t.Fatalf("open with unwrapped ring: %q, %v", p, err)
	}
	gen, sealed := got.Seal(nil, []byte("two"), ad)
	if p, err := ring.Open(nil, gen, sealed, ad); gen != 3 || err != nil || string(p) != "two" {
		t.Fatalf("unwrapped ring seals under %d: %q, %v", gen, p, err)
	}
	if got.Name([]byte("x")) != ring.Name([]byte("x")) || got.SealName("a/b") != ring.SealName("a/b") {
		t.Fatal("unwrapped ring names differently")
	}
}

func TestKeyFile_WrongPassphrase(t *testing.T) {
	k := wrap(t, newRing(t), string(pass))
	for _, p := range []string{"Correct horse battery staple", string(pass) + " ", "x"} {
		if _, err := k.Unwrap([]byte(p)); !errors.Is(err, crypt.ErrWrongPassphrase) {
			t.Fatalf("%q: %v, want ErrWrongPassphrase", p, err)
		}
	}
	if _, err := k.Unwrap(nil); !errors.Is(err, crypt.ErrEmptyPassphrase) {
		t.Fatalf("empty: %v, want ErrEmptyPassphrase", err)
	}
	// The wrapped ring is bound to its file's id.
	other := *k
	other.ID = "0123456789abcdef"
	if _, err := other.Unwrap(pass); !errors.Is(err, crypt.ErrWrongPassphrase) {
		t.Fatalf("id changed: %v, want ErrWrongPassphrase", err)
	}
	other = *k
	other.Data = slices.Clone(k.Data)
	other.Data[len(other.Data)-1] ^= 1
	if _, err := other.Unwrap(pass); !errors.Is(err, crypt.ErrWrongPassphrase) {
		t.Fatalf("data tampered: %v, want ErrWrongPassphrase", err)
	}
}

// Adding a key is wrapping the same ring again: each file has its own id
// and salt, and so its own wrapping.
func TestWrap_Twice_NewIDAndSalt(t *testing.T) {
	ring := newRing(t)
	a, b := wrap(t, ring, string(pass)), wrap(t, ring, string(pass))
	if a.ID == b.ID || bytes.Equal(a.Salt, b.Salt) || bytes.Equal(a.Data, b.Data) {
		t.Fatalf("two wraps share id %t, salt %t, data %t", a.ID == b.ID, bytes.Equal(a.Salt, b.Salt), bytes.Equal(a.Data, b.Data))
	}
	for _, k := range []*crypt.KeyFile{a, b} {
		if got, err := k.Unwrap(pass); err != nil || got.Name([]byte("x")) != ring.Name([]byte("x")) {
			t.Fatalf("unwrap %s: %v", k.ID, err)
		}
	}
}

func TestWrap_Refuses(t *testing.T) {
	ring := newRing(t)
	for name, c := range map[string]struct {
		ring  *crypt.Keyring
		pass  string
		p     crypt.KDFParams
		label string
		want  error
	}{
		"no ring":       {nil, "pw", crypt.TestKDFParams, "", nil},
		"zero ring":     {&crypt.Keyring{}, "pw", crypt.TestKDFParams, "", nil},
		"empty pass":    {ring, "", crypt.TestKDFParams, "", crypt.ErrEmptyPassphrase},
		"weak params":   {ring, "pw", crypt.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}, "", nil},
		"huge memory":   {ring, "pw", crypt.KDFParams{Time: 1, MemoryKiB: 4 << 20, Threads: 1}, "", nil},
		"control label": {ring, "pw", crypt.TestKDFParams, "a\x1b[2Jb", nil},
		"long label":    {ring, "pw", crypt.TestKDFParams, strings.Repeat("x", 257), nil},
	} {
		k, err := crypt.Wrap(c.ring, []byte(c.pass), c.p, c.label)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Fatalf("%s: %v, %v; want an error (%v)", name, k, err, c.want)
		}
	}
}

// fields returns k's stored JSON as a map, to be spoiled.
func fields(t *testing.T, k *crypt.KeyFile) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(crypt.EncodeKeyFile(k), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeKeyFile_Refuses(t *testing.T) {
	k := wrap(t, newRing(t), string(pass))
	valid := crypt.EncodeKeyFile(k)
	b64 := base64.StdEncoding.EncodeToString
	spoil := func(f func(m map[string]any)) []byte {
		m := fields(t, k)
		f(m)
		return encode(t, m)
	}
	set := func(key string, v any) []byte { return spoil(func(m map[string]any) { m[key] = v }) }
	param := func(key string, v any) []byte {
		return spoil(func(m map[string]any) { m["params"].(map[string]any)[key] = v })
	}
	cases := map[string][]byte{
		"empty":             {},
		"not JSON":          []byte("version: 1\n"),
		"truncated":         valid[:len(valid)/2],
		"array":             []byte(`[1]`),
		"null":              []byte(`null`),
		"trailing object":   append(slices.Clone(valid), `{}`...),
		"trailing garbage":  append(slices.Clone(valid), 'x'),
		"unknown field":     set("password", "hunter2"),
		"unknown param":     param("lanes", 4),
		"version 0":         set("version", 0),
		"version 2":         set("version", 2),
		"version string":    set("version", "1"),
		"no version":        spoil(func(m map[string]any) { delete(m, "version") }),
		"kdf scrypt":        set("kdf", "scrypt"),
		"kdf Argon2id":      set("kdf", "Argon2id"),
		"no kdf":            spoil(func(m map[string]any) { delete(m, "kdf") }),
		"no params":         spoil(func(m map[string]any) { delete(m, "params") }),
		"memory 4 GiB":      param("memory_kib", 4<<20),
		"memory 2 GiB+1":    param("memory_kib", 2<<20+1),
		"memory 2^32":       param("memory_kib", uint64(1)<<32),
		"memory 7 MiB":      param("memory_kib", 7<<10),
		"memory negative":   param("memory_kib", -1),
		"time 0":            param("time", 0),
		"time 11":           param("time", 11),
		"threads 0":         param("threads", 0),
		"threads 17":        param("threads", 17),
		"threads 256":       param("threads", 256),
		"test memory t2":    param("time", 2),
		"salt 15":           set("salt", b64(make([]byte, 15))),
		"salt 17":           set("salt", b64(make([]byte, 17))),
		"salt not base64":   set("salt", "!!!"),
		"no salt":           spoil(func(m map[string]any) { delete(m, "salt") }),
		"no data":           spoil(func(m map[string]any) { delete(m, "data") }),
		"data short":        set("data", b64(make([]byte, 40))),
		"no id":             spoil(func(m map[string]any) { delete(m, "id") }),
		"id traversal":      set("id", "../../../etc/pw"),
		"id upper":          set("id", strings.ToUpper(k.ID)),
		"id short":          set("id", k.ID[:14]),
		"no created":        spoil(func(m map[string]any) { delete(m, "created") }),
		"created offset":    set("created", k.Created.In(time.FixedZone("", 7200)).Format(time.RFC3339)),
		"created fraction":  set("created", k.Created.Add(time.Millisecond).Format(time.RFC3339Nano)),
		"created not time":  set("created", "yesterday"),
		"label control":     set("label", "a\x1bb"),
		"label too long":    set("label", strings.Repeat("é", 129)),
		"too large":         append(slices.Clone(valid), bytes.Repeat([]byte(" "), 4<<20)...),
		"label not string":  set("label", 1),
		"params not object": set("params", "argon2id"),
	}
	for name, data := range cases {
		got, err := crypt.DecodeKeyFile(data)
		if !errors.Is(err, crypt.ErrMalformedKeyFile) {
			t.Errorf("%s: %+v, %v; want ErrMalformedKeyFile", name, got, err)
		}
	}
}

func TestDecodeKeyFile_Accepts(t *testing.T) {
	k := wrap(t, newRing(t), string(pass))
	param := func(p crypt.KDFParams) []byte {
		c := *k
		c.Params = p
		return crypt.EncodeKeyFile(&c)
	}
	for name, data := range map[string][]byte{
		"as encoded":         crypt.EncodeKeyFile(k),
		"compact":            encode(t, fields(t, k)),
		"trailing space":     append(crypt.EncodeKeyFile(k), " \n\t"...),
		"no label":           func() []byte { c := *k; c.Label = ""; return crypt.EncodeKeyFile(&c) }(),
		"default params":     param(crypt.DefaultKDFParams),
		"RFC 9106 first":     param(crypt.KDFParams{Time: 1, MemoryKiB: 2 << 20, Threads: 4}),
		"floor":              param(crypt.KDFParams{Time: 1, MemoryKiB: 8 << 10, Threads: 1}),
		"ceiling":            param(crypt.KDFParams{Time: 10, MemoryKiB: 2 << 20, Threads: 16}),
		"unicode label 256B": func() []byte { c := *k; c.Label = strings.Repeat("é", 128); return crypt.EncodeKeyFile(&c) }(),
	} {
		if _, err := crypt.DecodeKeyFile(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The keyring's own serialisation, inside a key file, is strict too.
func TestUnmarshalRing_Strict(t *testing.T) {
	ring := newRing(t)
	ring.Rotate()
	good := crypt.MarshalRing(ring)
	if got, err := crypt.UnmarshalRing(good); err != nil || !slices.Equal(got.Generations(), []uint16{1, 2}) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	spoil := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version 2":     spoil(func(b []byte) []byte { b[0] = 2; return b }),
		"count 0":       spoil(func(b []byte) []byte { b[33], b[34] = 0, 0; return b }),
		"count 3":       spoil(func(b []byte) []byte { b[34] = 3; return b }),
		"trailing":      append(slices.Clone(good), 0),
		"truncated":     good[:len(good)-1],
		"id 0":          spoil(func(b []byte) []byte { b[35], b[36] = 0, 0; return b }),
		"ids descend":   spoil(func(b []byte) []byte { b[36], b[36+34] = 2, 1; return b }),
		"ids repeated":  spoil(func(b []byte) []byte { b[36+34] = 1; return b }),
		"one gen short": good[:35+34],
	} {
		if got, err := crypt.UnmarshalRing(b); err == nil {
			t.Errorf("%s: accepted %v", name, got)
		}
	}
}

func TestUnlockAny(t *testing.T) {
	ring := newRing(t)
	files := []*crypt.KeyFile{wrap(t, newRing(t), "first"), wrap(t, ring, "second"), wrap(t, ring, "third")}
	got, k, err := crypt.UnlockAny(files, []byte("third"))
	if err != nil || k != files[2] || got.Name([]byte("x")) != ring.Name([]byte("x")) {
		t.Fatalf("third: %v, %v", k, err)
	}
	if _, k, err := crypt.UnlockAny(files, []byte("first")); err != nil || k != files[0] {
		t.Fatalf("first: %v, %v", k, err)
	}
	if _, _, err := crypt.UnlockAny(files, []byte("none")); !errors.Is(err, crypt.ErrWrongPassphrase) {
		t.Fatalf("none: %v, want ErrWrongPassphrase", err)
	}
	withNil := append([]*crypt.KeyFile{nil}, files...)
	if _, _, err := crypt.UnlockAny(withNil, []byte("none")); !errors.Is(err, crypt.ErrWrongPassphrase) || !strings.Contains(err.Error(), "1 malformed") {
		t.Fatalf("none, one nil: %v", err)
	}
	if _, k, err := crypt.UnlockAny(withNil, []byte("second")); err != nil || k != files[1] {
		t.Fatalf("second past a nil: %v, %v", k, err)
	}
	for _, empty := range [][]*crypt.KeyFile{nil, {}} {
		if _, _, err := crypt.UnlockAny(empty, pass); !errors.Is(err, crypt.ErrNoKey) {
			t.Fatalf("no files: %v, want ErrNoKey", err)
		}
	}
}

// leaked reports how text shows secret, if it does: any 8 bytes of it,
// raw, in hex, in decimal, or in base64 at any alignment.
func leaked(text string, secret []byte) string {
	const w = 8
	for i := 0; i+w <= len(secret); i++ {
		part := secret[i : i+w]
		for form, s := range map[string]string{
			"raw":     string(part),
			"hex":     hex.EncodeToString(part),
			"HEX":     strings.ToUpper(hex.EncodeToString(part)),
			"decimal": strings.Trim(fmt.Sprint(part), "[]"),
			"escaped": strings.Trim(fmt.Sprintf("%q", part), `"`),
		} {
			if strings.Contains(text, s) {
				return form
			}
		}
	}
	for off := range 3 {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			s := enc.EncodeToString(secret[off:])[:12]
			if strings.Contains(text, s) {
				return "base64"
			}
		}
	}
	return ""
}

// No key, nor the passphrase, shows in anything a ring or a key file
// prints, marshals or fails with.
func TestNoSecretLeaks(t *testing.T) {
	ring := newRing(t)
	ring.Rotate()
	k := wrap(t, ring, string(pass))
	secrets := append(crypt.Secrets(ring), crypt.WrapKey(k, pass), pass)
	_, wrongErr := k.Unwrap([]byte("wrong"))
	_, _, unlockErr := crypt.UnlockAny([]*crypt.KeyFile{k}, []byte("wrong"))
	_, openErr := ring.Open(nil, 1, make([]byte, 100), ad)
	_, genErr := ring.Open(nil, 9, make([]byte, 100), ad)
	_, nameErr := ring.OpenName(ring.SealName("x")[1:])
	js, err := json.Marshal(ring)
	if err != nil {
		t.Fatal(err)
	}
	inner, _ := json.Marshal(struct {
		R  *crypt.Keyring
		V  crypt.Keyring
		rr *crypt.Keyring
	}{ring, *ring, ring})
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("unlocked", "ring", ring)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("unlocked", "ring", ring, "value", *ring)
	texts := map[string]string{
		"wrong passphrase": wrongErr.Error(),
		"unlock":           unlockErr.Error(),
		"open":             openErr.Error(),
		"generation":       genErr.Error(),
		"open name":        nameErr.Error(),
		"fmt pointer":      fmt.Sprintf("%v %+v %#v %s %d %x %X %q %T", ring, ring, ring, ring, ring, ring, ring, ring, ring),
		"fmt value":        fmt.Sprintf("%v %+v %#v %s %d %x %X %q", *ring, *ring, *ring, *ring, *ring, *ring, *ring, *ring),
		"fmt in struct":    fmt.Sprintf("%v %+v %#v", struct{ R *crypt.Keyring }{ring}, struct{ r crypt.Keyring }{*ring}, struct{ r *crypt.Keyring }{ring}),
		"String":           ring.String() + ring.GoString(),
		"json":             string(js) + string(inner),
		"slog":             logged.String(),
		"key file":         fmt.Sprintf("%+v", k) + string(crypt.EncodeKeyFile(k)),
	}
	for name, text := range texts {
		for i, s := range secrets {
			if form := leaked(text, s); form != "" {
				t.Errorf("%s shows secret %d (%s): %s", name, i, form, text)
			}
		}
	}
	if !strings.Contains(texts["fmt pointer"], "redacted") || !strings.Contains(string(js), "redacted") {
		t.Fatalf("no redacted text: %s / %s", texts["fmt pointer"], js)
	}
	// The leak check itself finds what it looks for.
	if leaked(fmt.Sprintf("%x", secrets[0]), secrets[0]) == "" || leaked(fmt.Sprint(secrets[1]), secrets[1]) == "" ||
		leaked(base64.RawURLEncoding.EncodeToString(secrets[2]), secrets[2]) == "" {
		t.Fatal("leaked misses a leak")
	}
}
