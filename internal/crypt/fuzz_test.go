package crypt_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/siltsync/silt/internal/crypt"
)

// Any bytes decode or fail with ErrMalformedKeyFile, never panic; what is
// accepted stores again as the same file.
func FuzzDecodeKeyFile(f *testing.F) {
	// A fixed ring: the fuzzing engine's workers each run this anew, and
	// the seeds they get come from another process.
	ring := fixedRing(f)
	k, err := crypt.Wrap(ring, []byte("pw"), crypt.TestKDFParams, "host/user")
	if err != nil {
		f.Fatal(err)
	}
	valid := crypt.EncodeKeyFile(k)
	f.Add(valid)
	f.Add(bytes.Replace(valid, []byte(`"time": 1`), []byte(`"time": 3`), 1))
	f.Add(bytes.Replace(valid, []byte(`"memory_kib": 64`), []byte(`"memory_kib": 4294967295`), 1))
	f.Add(bytes.Replace(valid, []byte(`"version": 1`), []byte(`"version": 2`), 1))
	f.Add(bytes.Replace(valid, []byte(`Z"`), []byte(`+01:00"`), 1))
	f.Add(append(valid, valid...))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":1,"id":"0011223344556677","created":"2026-01-02T03:04:05Z","kdf":"argon2id","params":{"time":1,"memory_kib":64,"threads":1},"salt":"AAAAAAAAAAAAAAAAAAAAAA==","data":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := crypt.DecodeKeyFile(data)
		if err != nil {
			if !errors.Is(err, crypt.ErrMalformedKeyFile) {
				t.Fatalf("error %v is not ErrMalformedKeyFile", err)
			}
			return
		}
		again := crypt.EncodeKeyFile(k)
		k2, err := crypt.DecodeKeyFile(again)
		if err != nil {
			t.Fatalf("accepted, re-encoded, refused: %v\n%s", err, again)
		}
		if !bytes.Equal(crypt.EncodeKeyFile(k2), again) {
			t.Fatalf("re-encoding is not stable:\n%s\n%s", again, crypt.EncodeKeyFile(k2))
		}
		// Only cheap parameters are worth unwrapping here; what opens is
		// the ring that was wrapped.
		if k.Params == crypt.TestKDFParams {
			got, err := k.Unwrap([]byte("pw"))
			if err == nil && got.Name([]byte("x")) != ring.Name([]byte("x")) {
				t.Fatal("opened to another ring")
			}
			if err != nil && !errors.Is(err, crypt.ErrWrongPassphrase) && !errors.Is(err, crypt.ErrMalformedKeyFile) {
				t.Fatalf("unwrap: %v", err)
			}
		}
	})
}

// Bytes not sealed by a ring never open under it, whatever generation
// they claim, and never panic.
func FuzzOpen(f *testing.F) {
	ring := newRing(f)
	ring.Rotate()
	other := newRing(f)
	for _, plain := range []string{"", "x", "apiVersion: v1\n"} {
		gen, sealed := other.Seal(nil, []byte(plain), ad)
		f.Add(gen, sealed, ad)
	}
	f.Add(uint16(2), make([]byte, crypt.Overhead), []byte(nil))
	f.Add(uint16(0), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, gen uint16, sealed, ad []byte) {
		got, err := ring.Open(nil, gen, sealed, ad)
		if err == nil {
			t.Fatalf("opened %d bytes without the key", len(got))
		}
		if !errors.Is(err, crypt.ErrAuth) && !errors.Is(err, crypt.ErrUnknownGeneration) {
			t.Fatalf("error %v is neither ErrAuth nor ErrUnknownGeneration", err)
		}
	})
}

// Text not sealed by a ring never opens as a name under it.
func FuzzOpenName(f *testing.F) {
	ring := newRing(f)
	other := newRing(f)
	for _, p := range []string{"", "a", "data/aws/ec2/vpc/m00001/1.yaml"} {
		f.Add(other.SealName(p))
	}
	f.Add("!!")
	f.Fuzz(func(t *testing.T, sealed string) {
		if p, err := ring.OpenName(sealed); !errors.Is(err, crypt.ErrAuth) {
			t.Fatalf("%q opened to %q, %v", sealed, p, err)
		}
	})
}

// fixedRing is the same ring in every process: two generations whose keys
// are all 0x42.
func fixedRing(t testing.TB) *crypt.Keyring {
	t.Helper()
	b := append([]byte{1}, bytes.Repeat([]byte{0x42}, 32)...)
	b = append(b, 0, 2)
	for id := range byte(2) {
		b = append(b, 0, id+1)
		b = append(b, bytes.Repeat([]byte{0x42}, 32)...)
	}
	ring, err := crypt.UnmarshalRing(b)
	if err != nil {
		t.Fatal(err)
	}
	return ring
}
