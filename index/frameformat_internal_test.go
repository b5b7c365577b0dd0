package index

import (
	"errors"
	"testing"
)

// A log moves forward in format only: an entry of format 5 on a state of
// format 6 (a writer that did not read the log it wrote to) is refused,
// though its hashes are right.
func TestFrameFormat_Format5EntryAfter6_Refused(t *testing.T) {
	base := &Manifest{Format: FrameFormat, Seq: 1, Shards: []ShardRef{}, ShardMaxEntries: 1000}
	h := Head{Manifest: base, Data: EncodeManifest(base)}
	n := &Manifest{Format: DeltaFormat, Seq: 2, Prev: h.stateHash(), Shards: []ShardRef{}, ShardMaxEntries: 1000}
	d := plainDiff(h, n, EncodeManifest(n))
	_, _, _, err := applyDelta(LogKey(2), h, encodeDelta(d))
	if !errors.Is(err, ErrCorruptIndex) {
		t.Fatalf("format-5 entry after format 6: %v, want ErrCorruptIndex", err)
	}
	n.Format = FrameFormat
	d = plainDiff(h, n, EncodeManifest(n))
	if _, _, _, err := applyDelta(LogKey(2), h, encodeDelta(d)); err != nil {
		t.Fatalf("the same entry in format 6: %v", err)
	}
}

// A shard or page frame that does not open is a typed error naming the
// object: corrupt bytes, a later codec (a newer format), a sealed one.
func TestFrameFormat_FramesThatDoNotOpen_TypedErrors(t *testing.T) {
	plain := []byte(`{"format":3,"entries":{}}`)
	good := storeIndexObject(FrameFormat, plain)
	if got, err := openIndexObject("k", good, 1<<20); err != nil || string(got) != string(plain) {
		t.Fatalf("open: %q, %v", got, err)
	}
	if got, err := openIndexObject("k", plain, 1<<20); err != nil || string(got) != string(plain) {
		t.Fatalf("plain bytes of format 5: %q, %v", got, err)
	}
	codec := append([]byte{}, good...)
	codec[5] = 9
	sealed := append([]byte{}, good...)
	sealed[7] = 1
	big := storeIndexObject(FrameFormat, make([]byte, 4096))
	for name, c := range map[string]struct {
		data []byte
		want error
	}{
		"unknown codec":  {codec, ErrNewerFormat},
		"sealed":         {sealed, ErrNewerFormat},
		"over bound":     {big, ErrIndexTooLarge},
		"truncated zstd": {storeIndexObject(FrameFormat, make([]byte, 4096))[:20], ErrCorruptIndex},
	} {
		_, err := openIndexObject("k", c.data, 1024)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}
