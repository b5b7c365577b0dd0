// Package frame is the envelope a stored object's bytes can carry: a
// fixed 8-byte header naming how the payload after it is encoded (plain
// or zstd) and which key sealed it (none yet), then the payload. It is
// the building block of the next format (docs/design-format6.md, "The
// frame"): a reader learns everything it needs from the object itself,
// so compression is chosen per object by what it saves and needs no flag,
// and encryption can be added later without another format.
//
// Package frame knows nothing of keys, paths or stores: callers name the
// object in their own errors, which wrap the sentinels here.
package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Magic opens every frame. Its first byte is not ASCII and not a zstd or
// gzip magic, so text and the common compressed formats never begin so.
const Magic = "\x89SLT"

// Version is the frame layout this package writes and reads.
const Version = 1

// HeaderLen is the length of the header: Magic, the version, the codec
// and the key id (big-endian uint16).
const HeaderLen = 8

// Codec names the encoding of a frame's payload.
type Codec byte

const (
	// Plain: the payload is the bytes themselves.
	Plain Codec = 0
	// Zstd: the payload is one zstd frame (RFC 8878) of the bytes.
	Zstd Codec = 1
)

func (c Codec) String() string {
	switch c {
	case Plain:
		return "plain"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec %d", byte(c))
}

// Header is what a frame says about its payload.
type Header struct {
	Codec Codec
	// KeyID names the key that sealed the payload; 0: none. This package
	// opens only unsealed frames (ErrSealed).
	KeyID uint16
}

// Sentinels the errors of this package wrap.
var (
	// ErrNotFrame: the bytes do not begin with a frame header.
	ErrNotFrame = errors.New("not a frame")
	// ErrUnsupported: a frame of a later version or an unknown codec.
	ErrUnsupported = errors.New("a frame this silt cannot decode")
	// ErrSealed: a frame sealed with a key (encryption), which a reader
	// without that key cannot open.
	ErrSealed = errors.New("a frame sealed with a key")
	// ErrCorrupt: a payload that does not decode.
	ErrCorrupt = errors.New("a frame whose payload does not decode")
	// ErrTooLarge: a payload that decodes to more bytes than the caller
	// allows.
	ErrTooLarge = errors.New("a frame larger than allowed")
)

// Is reports whether b begins with a frame header.
func Is(b []byte) bool { return len(b) >= HeaderLen && string(b[:len(Magic)]) == Magic }

// appendHeader appends h's header to dst.
func appendHeader(dst []byte, h Header) []byte {
	dst = append(dst, Magic...)
	dst = append(dst, Version, byte(h.Codec))
	return binary.BigEndian.AppendUint16(dst, h.KeyID)
}

// ParseHeader returns the header b begins with.
func ParseHeader(b []byte) (Header, error) {
	if !Is(b) {
		return Header{}, ErrNotFrame
	}
	if v := b[len(Magic)]; v != Version {
		return Header{}, fmt.Errorf("%w: version %d (this silt reads %d)", ErrUnsupported, v, Version)
	}
	h := Header{Codec: Codec(b[len(Magic)+1]), KeyID: binary.BigEndian.Uint16(b[len(Magic)+2:])}
	if h.KeyID != 0 {
		return h, fmt.Errorf("%w: key %d", ErrSealed, h.KeyID)
	}
	if h.Codec != Plain && h.Codec != Zstd {
		return h, fmt.Errorf("%w: %s", ErrUnsupported, h.Codec)
	}
	return h, nil
}

// minCompress is the size below which a payload is stored plain: zstd's
// own frame costs about a dozen bytes, so tiny inputs rarely gain.
const minCompress = 64

// Saves reports whether a payload of z bytes is worth storing for n
// plain ones: it must save at least a sixteenth, so data that is already
// compressed (images, archives, media) stays as it is and costs a reader
// no decoding.
func Saves(z, n int) bool { return n >= minCompress && z <= n-n/16 }

var (
	encOnce sync.Once
	enc     *zstd.Encoder
)

// encoder is the shared block encoder: EncodeAll is safe for concurrent
// use, and one encoder with fixed options makes the output a function of
// the input (content-named objects stay content-named).
func encoder() *zstd.Encoder {
	encOnce.Do(func() {
		var err error
		enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
		if err != nil {
			panic(err) // fixed, valid options
		}
	})
	return enc
}

// Encode returns the frame of plain: zstd when codec is Zstd and that
// saves enough (Saves), plain otherwise.
func Encode(plain []byte, codec Codec) []byte {
	if codec == Zstd && len(plain) >= minCompress {
		out := encoder().EncodeAll(plain, appendHeader(make([]byte, 0, HeaderLen+len(plain)/2), Header{Codec: Zstd}))
		if Saves(len(out)-HeaderLen, len(plain)) {
			return out
		}
	}
	out := appendHeader(make([]byte, 0, HeaderLen+len(plain)), Header{Codec: Plain})
	return append(out, plain...)
}

// Decode returns the bytes the frame stored holds, at most max of them
// (max <= 0: no bound).
func Decode(stored []byte, max int64) ([]byte, Header, error) {
	h, err := ParseHeader(stored)
	if err != nil {
		return nil, h, err
	}
	payload := stored[HeaderLen:]
	if h.Codec == Plain {
		if max > 0 && int64(len(payload)) > max {
			return nil, h, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(payload), max)
		}
		return payload, h, nil
	}
	d := decoders.Get().(*zstd.Decoder)
	defer putDecoder(d)
	if err := d.Reset(bytes.NewReader(payload)); err != nil {
		return nil, h, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	out, err := readBounded(d, max, sizeHint(payload, max))
	return out, h, err
}

// sizeHint is the plain size a zstd payload declares (our encoder
// writes it), so Decode allocates once; a declared size is only a hint,
// never trusted past max.
func sizeHint(payload []byte, max int64) int {
	var zh zstd.Header
	if zh.Decode(payload) != nil || !zh.HasFCS || max > 0 && int64(zh.FrameContentSize) > max || zh.FrameContentSize > 64<<20 {
		return 0
	}
	return int(zh.FrameContentSize)
}

// decoders holds stream decoders for Decode: a decoder's buffers cost
// more to build than a small index object costs to decode, and Reset
// makes one reusable. Synchronous (concurrency 1) decoders start no
// goroutine, so one dropped by the pool needs no Close.
var decoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(err) // fixed, valid options
	}
	return d
}}

// putDecoder returns d to the pool, holding no reference to its input.
func putDecoder(d *zstd.Decoder) {
	if d.Reset(nil) == nil {
		decoders.Put(d)
	}
}

// readBounded reads r to its end, failing past max bytes; hint is the
// expected length (0: unknown).
func readBounded(r io.Reader, max int64, hint int) ([]byte, error) {
	lr := r
	if max > 0 {
		lr = io.LimitReader(r, max+1)
	}
	out, err := readAll(lr, hint)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	case max > 0 && int64(len(out)) > max:
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return out, nil
}

// readAll is io.ReadAll starting from a buffer of size+1 bytes (the
// one past the end sees io.EOF), so a hinted read allocates once.
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, max(size+1, 512))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as append does
		}
	}
}

// NewReader reads a frame's header from r and returns a reader of the
// bytes the frame holds: the payload itself, or its zstd stream decoded.
// A payload that does not decode fails a Read with ErrCorrupt. Close
// releases the decoder; it does not close r.
func NewReader(r io.Reader) (io.ReadCloser, Header, error) {
	var hb [HeaderLen]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, Header{}, ErrNotFrame
		}
		return nil, Header{}, err
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return nil, h, err
	}
	if h.Codec == Plain {
		return io.NopCloser(r), h, nil
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, h, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &zstdReader{zr: zr}, h, nil
}

type zstdReader struct{ zr *zstd.Decoder }

func (z *zstdReader) Read(p []byte) (int, error) {
	n, err := z.zr.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return n, err
}

func (z *zstdReader) Close() error { z.zr.Close(); return nil }

// NewWriter writes a frame of codec to w: the header at once, then what
// is written, encoded. Close flushes the encoding; it does not close w.
// For a stream, the choice of codec is the caller's (see Worth).
func NewWriter(w io.Writer, codec Codec) (io.WriteCloser, error) {
	if codec != Plain && codec != Zstd {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, codec)
	}
	if _, err := w.Write(appendHeader(nil, Header{Codec: codec})); err != nil {
		return nil, err
	}
	if codec == Plain {
		return nopWriteCloser{w}, nil
	}
	return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Worth reports whether zstd is worth it for a stream that begins with
// sample (a stream's codec is chosen before its end is read): whether
// the sample compresses by Saves.
func Worth(sample []byte) bool {
	if len(sample) < minCompress {
		return false
	}
	return Saves(len(encoder().EncodeAll(sample, nil)), len(sample))
}
