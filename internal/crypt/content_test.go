package crypt_test

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/siltsync/silt/internal/crypt"
)

func TestHideID_RevealsWhatItHid_AndHidesIt(t *testing.T) {
	ring, err := crypt.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := crypt.NewKeyring()
	for _, n := range []int{16, 32} {
		for range 50 {
			id := make([]byte, n)
			rand.Read(id)
			h, err := ring.HideID(id)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != n || bytes.Equal(h, id) {
				t.Fatalf("HideID(%x) = %x", id, h)
			}
			back, _ := ring.RevealID(h)
			if !bytes.Equal(back, id) {
				t.Fatalf("RevealID(HideID(%x)) = %x", id, back)
			}
			if h2, _ := other.HideID(id); bytes.Equal(h2, h) {
				t.Fatal("two rings hide an id alike")
			}
		}
	}
	// Every output byte depends on the first input byte: ids sharing
	// their second half share nothing once hidden.
	a, b := make([]byte, 32), make([]byte, 32)
	b[0] = 1
	ha, _ := ring.HideID(a)
	hb, _ := ring.HideID(b)
	if bytes.Equal(ha[16:], hb[16:]) || bytes.Equal(ha[:16], hb[:16]) {
		t.Fatalf("a change in the first byte left a half unchanged: %x %x", ha, hb)
	}
	if _, err := ring.HideID(make([]byte, 20)); err == nil {
		t.Fatal("HideID took 20 bytes")
	}
}

func TestKeystream_SeekMatchesStream(t *testing.T) {
	ring, _ := crypt.NewKeyring()
	plain := make([]byte, 5000)
	rand.Read(plain)
	whole := make([]byte, len(plain))
	ring.Keystream("objects/x").XOR(whole, plain)
	if bytes.Equal(whole, plain) {
		t.Fatal("keystream XORed nothing")
	}
	for _, off := range []int{0, 1, 63, 64, 65, 1000, 4999} {
		ks := ring.Keystream("objects/x")
		ks.SeekTo(int64(off))
		part := make([]byte, len(plain)-off)
		ks.XOR(part, plain[off:])
		if !bytes.Equal(part, whole[off:]) {
			t.Fatalf("at offset %d the keystream differs from the whole stream's", off)
		}
	}
	other := make([]byte, len(plain))
	ring.Keystream("objects/y").XOR(other, plain)
	if bytes.Equal(other, whole) {
		t.Fatal("two names share a keystream")
	}
}
