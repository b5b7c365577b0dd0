package conformance

import (
	"testing"
)

func checkSyncerPushPull_RoundTrip(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(withShardMax(8)), bk.host(withShardMax(8))
	files := map[string]string{}
	for _, m := range []string{"m1", "m2", "m3"} {
		for p, c := range modelFiles("aws/ec2", m, 5) {
			files[p] = c
		}
	}
	a.writeMark(files)
	st := a.push()
	// Three "latest" markers hold the same bytes: stored once.
	mustEqual(t, "uploaded", st.Files.Uploaded, len(files)-2)
	mustEqual(t, "deduplicated", st.Files.Deduplicated, 2)
	mustEqual(t, "seq", st.Seq, uint64(1))

	st = b.pull()
	mustEqual(t, "downloaded", st.Files.Downloaded, len(files))
	for p, c := range files {
		got, ok := b.read(p)
		if !ok || got != c {
			t.Errorf("%s = %q, %v; want %q", p, got, ok, c)
		}
	}
	// A second pull has nothing to do and reads no shard.
	c := b.counted()
	st = b.pull()
	mustEqual(t, "downloaded again", st.Files.Downloaded, 0)
	mustEqual(t, "requests of a no-op pull", c.Counts().Total(), int64(1))
	mustEqual(t, "bytes of a no-op pull (a conditional manifest read)", c.Counts().BytesDown, int64(0))
}

func checkSyncerPush_NothingDirtySendsNoRequest(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host()
	a.writeMark(map[string]string{"x/y": "1"})
	a.push()
	c := a.counted()
	st := a.push()
	mustEqual(t, "requests", c.Counts().Total(), int64(0))
	mustEqual(t, "uploaded", st.Files.Uploaded, 0)
}
