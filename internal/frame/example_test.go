package frame_test

import (
	"bytes"
	"fmt"

	"github.com/siltsync/silt/internal/frame"
)

// A shard's JSON is stored as a zstd frame, which says so itself.
func Example() {
	plain := bytes.Repeat([]byte(`{"path":"data/aws/ec2/vpc/m00001/1.yaml","size":1824},`), 64)
	stored := frame.Encode(plain, frame.Zstd)
	got, h, err := frame.Decode(stored, 1<<20)
	fmt.Println(h.Codec, err, bytes.Equal(got, plain), len(stored) < len(plain)/10)
	// Output: zstd <nil> true true
}
