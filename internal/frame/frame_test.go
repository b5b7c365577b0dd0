package frame_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/siltsync/silt/internal/frame"
)

// yamlish is host state as hosts keep it: a model version in YAML.
func yamlish(i int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Model\nmetadata:\n  name: vpc-%05d\n  labels:\n    region: eu-west-1\n    owner: team-%d\n", i, i%7)
	for j := range 40 {
		fmt.Fprintf(&b, "spec:\n  subnet-%02d:\n    cidr: 10.%d.%d.0/24\n    public: %t\n    tags: [prod, web, \"svc-%d\"]\n", j, i%256, j, j%2 == 0, j*i%97)
	}
	return []byte(b.String())
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// Text is stored zstd, and reads back as itself, whole or streamed.
func TestFrame_Text_StoredZstd_ReadsBack(t *testing.T) {
	plain := yamlish(1)
	stored := frame.Encode(plain, frame.Zstd)
	h, err := frame.ParseHeader(stored)
	if err != nil || h.Codec != frame.Zstd {
		t.Fatalf("header %+v, %v; want zstd", h, err)
	}
	if len(stored)*3 > len(plain) {
		t.Fatalf("%d bytes stored for %d plain: want at least 3x smaller", len(stored), len(plain))
	}
	got, _, err := frame.Decode(stored, 0)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("decode: %v (equal %t)", err, bytes.Equal(got, plain))
	}
	r, _, err := frame.NewReader(bytes.NewReader(stored))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	streamed, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(streamed, plain) {
		t.Fatalf("stream: %v (equal %t)", err, bytes.Equal(streamed, plain))
	}
}

// Bytes that do not compress (already compressed, random, tiny) are
// stored as they are, behind the header only.
func TestFrame_Incompressible_StoredPlain(t *testing.T) {
	for name, plain := range map[string][]byte{
		"random":     random(64 << 10),
		"compressed": frame.Encode(yamlish(2), frame.Zstd)[frame.HeaderLen:],
		"tiny":       []byte("a: 1\n"),
		"empty":      {},
	} {
		t.Run(name, func(t *testing.T) {
			stored := frame.Encode(plain, frame.Zstd)
			if h, err := frame.ParseHeader(stored); err != nil || h.Codec != frame.Plain {
				t.Fatalf("header %+v, %v; want plain", h, err)
			}
			if len(stored) != len(plain)+frame.HeaderLen {
				t.Fatalf("%d bytes stored for %d", len(stored), len(plain))
			}
			if got, _, err := frame.Decode(stored, 0); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("decode: %v", err)
			}
		})
	}
}

// The same bytes always make the same frame: content-named objects stay
// content-named.
func TestFrame_Encode_IsAFunctionOfItsInput(t *testing.T) {
	plain := bytes.Repeat(yamlish(3), 20)
	a, b := frame.Encode(plain, frame.Zstd), frame.Encode(bytes.Clone(plain), frame.Zstd)
	if !bytes.Equal(a, b) {
		t.Fatal("two encodings of one input differ")
	}
}

// Bad input is a typed error, never a panic and never bytes.
func TestFrame_BadInput_TypedErrors(t *testing.T) {
	good := frame.Encode(bytes.Repeat(yamlish(4), 4), frame.Zstd)
	with := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	for _, tc := range []struct {
		name   string
		stored []byte
		want   error
	}{
		{"empty", nil, frame.ErrNotFrame},
		{"plain bytes", []byte("apiVersion: v1\nkind: Model\n"), frame.ErrNotFrame},
		{"short header", good[:5], frame.ErrNotFrame},
		{"later version", with(4, frame.Version+1), frame.ErrUnsupported},
		{"unknown codec", with(5, 9), frame.ErrUnsupported},
		{"sealed", with(7, 1), frame.ErrSealed},
		{"truncated payload", good[:len(good)-7], frame.ErrCorrupt},
		{"flipped payload byte", with(len(good)/2, good[len(good)/2]^0xff), frame.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := frame.Decode(tc.stored, 0)
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("Decode: %d bytes, %v; want %v", len(got), err, tc.want)
			}
			r, _, err := frame.NewReader(bytes.NewReader(tc.stored))
			if err == nil {
				_, err = io.ReadAll(r)
				r.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("NewReader: %v; want %v", err, tc.want)
			}
		})
	}
}

// A small frame that decodes to a great many bytes (a zip bomb) is
// refused at the caller's bound, not held in memory.
func TestFrame_Decode_BoundsWhatItExpands(t *testing.T) {
	stored := frame.Encode(make([]byte, 64<<20), frame.Zstd)
	if len(stored) > 64<<10 {
		t.Fatalf("64 MiB of zeros stored in %d bytes", len(stored))
	}
	if _, _, err := frame.Decode(stored, 1<<20); !errors.Is(err, frame.ErrTooLarge) {
		t.Fatalf("decode with a 1 MiB bound: %v; want ErrTooLarge", err)
	}
	if _, _, err := frame.Decode(frame.Encode(make([]byte, 2<<20), frame.Plain), 1<<20); !errors.Is(err, frame.ErrTooLarge) {
		t.Fatalf("plain frame over the bound: %v; want ErrTooLarge", err)
	}
}

// A stream written through NewWriter reads back through Decode and
// NewReader, for either codec.
func TestFrame_Writer_RoundTrips(t *testing.T) {
	plain := bytes.Repeat(yamlish(5), 300) // about 2 MiB: several zstd blocks
	for _, c := range []frame.Codec{frame.Plain, frame.Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := frame.NewWriter(&buf, c)
			if err != nil {
				t.Fatal(err)
			}
			for chunk := range slices(plain, 100_000) {
				if _, err := w.Write(chunk); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, h, err := frame.Decode(buf.Bytes(), 0)
			if err != nil || h.Codec != c || !bytes.Equal(got, plain) {
				t.Fatalf("decode: %+v, %v (equal %t)", h, err, bytes.Equal(got, plain))
			}
		})
	}
	if _, err := frame.NewWriter(io.Discard, 7); !errors.Is(err, frame.ErrUnsupported) {
		t.Fatalf("writer of codec 7: %v", err)
	}
}

func slices(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			k := min(n, len(b))
			if !yield(b[:k]) {
				return
			}
			b = b[k:]
		}
	}
}

// Worth judges a stream by its sample as Encode judges a whole.
func TestFrame_Worth_JudgesTheSample(t *testing.T) {
	if !frame.Worth(yamlish(6)) {
		t.Fatal("YAML judged not worth compressing")
	}
	if frame.Worth(random(1 << 20)) {
		t.Fatal("random bytes judged worth compressing")
	}
}

// Decoders see hostile bytes: whatever they are, Decode and NewReader
// agree, never panic, and what Encode makes reads back.
func FuzzFrame_Decode(f *testing.F) {
	f.Add(frame.Encode(yamlish(7), frame.Zstd))
	f.Add(frame.Encode([]byte("x"), frame.Zstd))
	f.Add([]byte(frame.Magic + "\x01\x01\x00\x00(\xb5/\xfd"))
	f.Fuzz(func(t *testing.T, stored []byte) {
		got, _, err := frame.Decode(stored, 1<<20)
		r, _, rerr := frame.NewReader(bytes.NewReader(stored))
		var streamed []byte
		if rerr == nil {
			streamed, rerr = io.ReadAll(io.LimitReader(r, 1<<20+1))
			r.Close()
		}
		if err == nil && (rerr != nil || !bytes.Equal(got, streamed)) {
			t.Fatalf("Decode read %d bytes, NewReader %d (%v)", len(got), len(streamed), rerr)
		}
		again, _, err := frame.Decode(frame.Encode(stored, frame.Zstd), 0)
		if err != nil || !bytes.Equal(again, stored) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// BenchmarkEncode_YAMLTree reports what zstd saves on host state: the
// stored bytes per plain byte of 1,000 YAML model versions, each its own
// frame (as packed files are).
func BenchmarkEncode_YAMLTree(b *testing.B) {
	files := make([][]byte, 1000)
	plain := 0
	for i := range files {
		files[i] = yamlish(i)
		plain += len(files[i])
	}
	b.SetBytes(int64(plain))
	stored := 0
	for b.Loop() {
		stored = 0
		for _, f := range files {
			stored += len(frame.Encode(f, frame.Zstd))
		}
	}
	b.ReportMetric(float64(plain)/float64(stored), "x-smaller")
}

// BenchmarkDecode_SmallObject is the decoding of an index-sized object
// (about 8 KB of YAML-like text): what a reader pays per shard or page.
func BenchmarkDecode_SmallObject(b *testing.B) {
	var plain []byte
	for i := 0; len(plain) < 8<<10; i++ {
		plain = append(plain, yamlish(i)...)
	}
	stored := frame.Encode(plain, frame.Zstd)
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := frame.Decode(stored, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
