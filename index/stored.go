package index

import (
	"errors"
	"fmt"

	"github.com/siltsync/silt/internal/frame"
)

// storeIndexObject returns the bytes a shard or checkpoint page whose
// plain bytes are plain is stored as in a bucket of format: from
// FrameFormat on a frame (zstd when it saves), before it the plain bytes,
// which an older silt reads. The object keeps the name of its plain bytes
// either way, so the same state has the same names in both.
func storeIndexObject(format int, plain []byte) []byte {
	if format < FrameFormat {
		return plain
	}
	return frame.Encode(plain, frame.Zstd)
}

// openIndexObject returns the plain bytes of a shard or page read from
// key: a frame is decoded (at most bound bytes), anything else is taken
// as the plain bytes an older format stored. A frame this silt cannot
// open is a newer format; one that does not decode is corrupt.
func openIndexObject(key string, stored []byte, bound int64) ([]byte, error) {
	if !frame.Is(stored) {
		return stored, nil
	}
	plain, _, err := frame.Decode(stored, bound)
	switch {
	case err == nil:
		return plain, nil
	case errors.Is(err, frame.ErrTooLarge):
		return nil, &FormatError{Key: key, Reason: fmt.Sprintf("decodes to more than %d bytes", bound), Err: ErrIndexTooLarge}
	case errors.Is(err, frame.ErrUnsupported), errors.Is(err, frame.ErrSealed):
		return nil, &FormatError{Key: key, Reason: err.Error(), Err: ErrNewerFormat}
	}
	return nil, corrupt(key, "%v", err)
}
