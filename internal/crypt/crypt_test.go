package crypt_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/siltsync/silt/internal/crypt"
)

func newRing(t testing.TB) *crypt.Keyring {
	t.Helper()
	ring, err := crypt.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

var ad = []byte("data/aws/ec2/vpc/m00001/1.yaml \x89SLT\x01\x00\x00\x01")

// What Seal seals, Open opens, at every size, and nothing else.
func TestSeal_RoundTrip(t *testing.T) {
	ring := newRing(t)
	for _, n := range []int{0, 1, 1 << 20} {
		plain := random(n)
		gen, sealed := ring.Seal(nil, plain, ad)
		if gen != 1 || len(sealed) != n+crypt.Overhead {
			t.Fatalf("%d bytes: generation %d, %d sealed; want 1, %d", n, gen, len(sealed), n+crypt.Overhead)
		}
		if n > 16 && bytes.Contains(sealed, plain[:16]) {
			t.Fatalf("%d bytes: sealed bytes hold the plaintext", n)
		}
		got, err := ring.Open(nil, gen, sealed, ad)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: open: %v (equal %t)", n, err, bytes.Equal(got, plain))
		}
	}
	// nil plaintext and nil ad are a plaintext and an ad like others.
	gen, sealed := ring.Seal(nil, nil, nil)
	if got, err := ring.Open(nil, gen, sealed, nil); err != nil || len(got) != 0 {
		t.Fatalf("nil: %q, %v", got, err)
	}
}

// Seal and Open append to dst, as cipher.AEAD does.
func TestSeal_AppendsToDst(t *testing.T) {
	ring := newRing(t)
	gen, sealed := ring.Seal([]byte("head:"), []byte("body"), ad)
	if string(sealed[:5]) != "head:" {
		t.Fatalf("sealed %q: want it after dst", sealed[:5])
	}
	got, err := ring.Open([]byte("head:"), gen, sealed[5:], ad)
	if err != nil || string(got) != "head:body" {
		t.Fatalf("open: %q, %v", got, err)
	}
}

// The nonce is random: equal plaintexts seal differently.
func TestSeal_SamePlaintext_Differs(t *testing.T) {
	ring := newRing(t)
	_, a := ring.Seal(nil, []byte("same"), ad)
	_, b := ring.Seal(nil, []byte("same"), ad)
	if bytes.Equal(a, b) {
		t.Fatal("two seals of one plaintext are equal")
	}
	if bytes.Equal(a[:24], b[:24]) {
		t.Fatal("two seals share a nonce")
	}
}

// Every way of changing sealed bytes, or their binding, is ErrAuth.
func TestOpen_Tampered_ErrAuth(t *testing.T) {
	ring := newRing(t)
	plain := random(100)
	gen, sealed := ring.Seal(nil, plain, ad)
	for i := range sealed {
		bad := slices.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := ring.Open(nil, gen, bad, ad); !errors.Is(err, crypt.ErrAuth) {
			t.Fatalf("byte %d flipped: %v, want ErrAuth", i, err)
		}
	}
	for _, n := range []int{0, 1, crypt.Overhead - 1, crypt.Overhead, len(sealed) - 1} {
		if _, err := ring.Open(nil, gen, sealed[:n], ad); !errors.Is(err, crypt.ErrAuth) {
			t.Fatalf("truncated to %d: %v, want ErrAuth", n, err)
		}
	}
	if _, err := ring.Open(nil, gen, append(slices.Clone(sealed), 0), ad); !errors.Is(err, crypt.ErrAuth) {
		t.Fatalf("extended: %v, want ErrAuth", err)
	}
	moved := []byte("data/aws/ec2/vpc/m00002/1.yaml \x89SLT\x01\x00\x00\x01")
	for name, other := range map[string][]byte{"other name": moved, "no ad": nil, "ad prefix": ad[:len(ad)-1]} {
		if _, err := ring.Open(nil, gen, sealed, other); !errors.Is(err, crypt.ErrAuth) {
			t.Fatalf("%s: %v, want ErrAuth", name, err)
		}
	}
	if _, err := newRing(t).Open(nil, gen, sealed, ad); !errors.Is(err, crypt.ErrAuth) {
		t.Fatalf("another ring: %v, want ErrAuth", err)
	}
}

func TestOpen_UnknownGeneration(t *testing.T) {
	ring := newRing(t)
	gen, sealed := ring.Seal(nil, []byte("x"), ad)
	for _, g := range []uint16{0, gen + 1, 65535} {
		_, err := ring.Open(nil, g, sealed, ad)
		if !errors.Is(err, crypt.ErrUnknownGeneration) || errors.Is(err, crypt.ErrAuth) {
			t.Fatalf("generation %d: %v, want ErrUnknownGeneration only", g, err)
		}
	}
}

// After Rotate the new generation seals; the old ones still open, and a
// ring from before the rotation refuses what the new one sealed.
func TestRotate(t *testing.T) {
	ring := newRing(t)
	before := newRingCopy(t, ring)
	g1, old := ring.Seal(nil, []byte("old"), ad)
	if g := ring.Rotate(); g != 2 || ring.Current() != 2 {
		t.Fatalf("rotate: %d, current %d; want 2", g, ring.Current())
	}
	if g := ring.Rotate(); g != 3 {
		t.Fatalf("second rotate: %d, want 3", g)
	}
	if got := ring.Generations(); !slices.Equal(got, []uint16{1, 2, 3}) {
		t.Fatalf("generations %v", got)
	}
	g3, fresh := ring.Seal(nil, []byte("new"), ad)
	if g1 != 1 || g3 != 3 {
		t.Fatalf("sealed under %d then %d, want 1 then 3", g1, g3)
	}
	if got, err := ring.Open(nil, g1, old, ad); err != nil || string(got) != "old" {
		t.Fatalf("old after rotate: %q, %v", got, err)
	}
	if _, err := ring.Open(nil, g3, fresh, ad); err != nil {
		t.Fatal(err)
	}
	if _, err := before.Open(nil, g3, fresh, ad); !errors.Is(err, crypt.ErrUnknownGeneration) {
		t.Fatalf("ring before rotation: %v, want ErrUnknownGeneration", err)
	}
	if got, err := before.Open(nil, g1, old, ad); err != nil || string(got) != "old" {
		t.Fatalf("ring before rotation, old object: %q, %v", got, err)
	}
	// A generation's id is not its key: sealed under 3, opened as 1 fails.
	if _, err := ring.Open(nil, 1, fresh, ad); !errors.Is(err, crypt.ErrAuth) {
		t.Fatalf("wrong generation: %v, want ErrAuth", err)
	}
}

// newRingCopy returns ring as it is now, through a key file.
func newRingCopy(t testing.TB, ring *crypt.Keyring) *crypt.Keyring {
	t.Helper()
	k, err := crypt.Wrap(ring, []byte("pw"), crypt.TestKDFParams, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := k.Unwrap([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Seal, Open and Rotate may run at once (run with -race).
func TestKeyring_Concurrent(t *testing.T) {
	ring := newRing(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				gen, sealed := ring.Seal(nil, []byte("x"), ad)
				if _, err := ring.Open(nil, gen, sealed, ad); err != nil {
					t.Error(err)
					return
				}
				_ = ring.Name([]byte("x"))
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			ring.Rotate()
		}
	})
	wg.Wait()
	if ring.Current() != 21 {
		t.Fatalf("current %d, want 21", ring.Current())
	}
}

func BenchmarkSeal_1MiB(b *testing.B) {
	ring := newRing(b)
	plain := random(1 << 20)
	buf := make([]byte, 0, len(plain)+crypt.Overhead)
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		_, buf = ring.Seal(buf[:0], plain, ad)
	}
}

func BenchmarkOpen_1MiB(b *testing.B) {
	ring := newRing(b)
	plain := random(1 << 20)
	gen, sealed := ring.Seal(nil, plain, ad)
	buf := make([]byte, 0, len(plain))
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		var err error
		if buf, err = ring.Open(buf[:0], gen, sealed, ad); err != nil {
			b.Fatal(err)
		}
	}
}
