package crypt_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/siltsync/silt/internal/crypt"
)

// A keyed name is the same in every cache holding the ring, and tells an
// outside reader nothing of the content's plain hash.
func TestName(t *testing.T) {
	ring := newRing(t)
	plain := []byte("apiVersion: v1\nkind: Model\n")
	name := ring.Name(plain)
	if len(name) != 64 || strings.ToLower(name) != name {
		t.Fatalf("name %q: want 64 lowercase hex digits", name)
	}
	if _, err := hex.DecodeString(name); err != nil {
		t.Fatal(err)
	}
	if name != ring.Name(plain) {
		t.Fatal("Name is not deterministic")
	}
	if c := newRingCopy(t, ring); c.Name(plain) != name {
		t.Fatal("Name differs after Wrap/Unwrap")
	}
	sum := sha256.Sum256(plain)
	if name == hex.EncodeToString(sum[:]) {
		t.Fatal("Name is the plain sha256")
	}
	if newRing(t).Name(plain) == name {
		t.Fatal("two rings name alike")
	}
	if ring.Name(append(plain, 0)) == name {
		t.Fatal("different bytes name alike")
	}
	ring.Rotate()
	if ring.Name(plain) != name {
		t.Fatal("Rotate changed a content name")
	}
}

// NameHash streamed in pieces is Name of the whole.
func TestNameHash_StreamsName(t *testing.T) {
	ring := newRing(t)
	plain := random(3<<20 + 17)
	h := ring.NameHash()
	if _, err := io.CopyBuffer(h, strings.NewReader(string(plain)), make([]byte, 4093)); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ring.Name(plain) {
		t.Fatalf("stream %s, Name %s", got, ring.Name(plain))
	}
}

var oddNames = []string{
	"",
	"a",
	"data/aws/ec2/vpc/m00001/1.yaml",
	"/leading/and/trailing/",
	"ünïcödé/名前/🦀.txt",
	"with space\tand\nnewline",
	"\x00\xff not utf-8",
	strings.Repeat("deep/", 819) + "x", // 4 KiB
}

func TestSealName_RoundTrip(t *testing.T) {
	ring := newRing(t)
	seen := map[string]string{}
	for _, path := range oddNames {
		sealed := ring.SealName(path)
		if strings.ContainsAny(sealed, "/+=\\ \n%?#") {
			t.Fatalf("%.40q sealed to %.40q: not path- and URL-safe", path, sealed)
		}
		if sealed != ring.SealName(path) {
			t.Fatalf("%.40q: SealName is not deterministic", path)
		}
		if c := newRingCopy(t, ring); c.SealName(path) != sealed {
			t.Fatalf("%.40q: SealName differs after Wrap/Unwrap", path)
		}
		if len(path) >= 8 && strings.Contains(sealed, path) {
			t.Fatalf("%.40q shows in its sealed name", path)
		}
		if p, ok := seen[sealed]; ok {
			t.Fatalf("%.40q and %.40q seal alike", p, path)
		}
		seen[sealed] = path
		got, err := ring.OpenName(sealed)
		if err != nil || got != path {
			t.Fatalf("%.40q: open %.40q, %v", path, got, err)
		}
	}
}

func TestOpenName_Tampered_ErrAuth(t *testing.T) {
	ring := newRing(t)
	sealed := ring.SealName("data/aws/ec2/vpc/m00001/1.yaml")
	raw, _ := base64.RawURLEncoding.DecodeString(sealed)
	enc := base64.RawURLEncoding.EncodeToString
	cases := map[string]string{
		"empty":          "",
		"not base64":     "not/base64!",
		"padded":         sealed + "==",
		"short":          enc(raw[:crypt.Overhead-1]),
		"truncated":      enc(raw[:len(raw)-1]),
		"extended":       enc(append(raw, 0)),
		"other ring":     newRing(t).SealName("data/aws/ec2/vpc/m00001/1.yaml"),
		"last char":      sealed[:len(sealed)-1] + string("AB"[boolInt(sealed[len(sealed)-1] == 'A')]),
		"std encoding":   base64.StdEncoding.EncodeToString(raw),
		"one char short": sealed[:len(sealed)-1],
	}
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x80
		cases[fmt.Sprintf("byte %d flipped", i)] = enc(b)
	}
	for name, s := range cases {
		if got, err := ring.OpenName(s); !errors.Is(err, crypt.ErrAuth) {
			t.Fatalf("%s: %q, %v; want ErrAuth", name, got, err)
		}
	}
}

// Each path has one sealed name: a text that opens under the ring's key
// but with another IV than the path's is refused, so sealed names can be
// compared as names.
func TestOpenName_NonCanonical_ErrAuth(t *testing.T) {
	ring := newRing(t)
	forged := crypt.SealNameWithIV(ring, "a/b", make([]byte, 24))
	if _, err := ring.OpenName(forged); !errors.Is(err, crypt.ErrAuth) {
		t.Fatalf("sealed with another IV: %v, want ErrAuth", err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
