package seal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/seal"
	"github.com/siltsync/silt/conformance"
	"github.com/siltsync/silt/internal/crypt"
)

var pass = []byte("correct horse battery staple")

// newSealed returns an encrypted bucket over mem, through the production
// layers as backend.Open builds them, and the raw store below.
func newSealed(t *testing.T) (*seal.Store, backend.Backend) {
	t.Helper()
	raw := backend.Production(mem.New())
	s, _, err := seal.Init(t.Context(), raw, pass, crypt.TestKDFParams, "test")
	if err != nil {
		t.Fatal(err)
	}
	return s, raw
}

func TestSeal_Conformance(t *testing.T) {
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		s, _ := newSealed(t)
		return s
	})
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// rawObjects returns every stored key and its bytes.
func rawObjects(t *testing.T, raw backend.Backend) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := raw.List(t.Context(), "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			b, _, err := backend.ReadAll(t.Context(), raw, o.Key, backend.GetOptions{}, 0)
			if err != nil {
				return err
			}
			out[o.Key] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSeal_BucketHoldsNoNameNoHashNoByte(t *testing.T) {
	s, raw := newSealed(t)
	ctx := t.Context()
	secret := []byte("the-secret-payload-" + strings.Repeat("x", 300))
	h := sha(secret)
	keys := map[string][]byte{
		".silt/objects/" + h[:2] + "/" + h:                     secret,
		".silt/packs/" + h[:2] + "/" + h:                       secret,
		".silt/shards/" + h[:32] + ".json":                     []byte(`{"path":"secret-dir/plans.yaml"}`),
		".silt/log/00000000000000000007.json":                  []byte(`{"set":"secret-dir/plans.yaml"}`),
		".silt/manifest.json":                                  []byte(`{"hint":"secret-dir"}`),
		".silt/control/secret-run/step":                        []byte("secret control record"),
		".silt/locks/secret-lock":                              []byte("holder secret-host"),
		"secret-namespace/.silt/log/00000000000000000001.json": []byte("ns secret entry"),
	}
	for k, v := range keys {
		if _, err := backend.PutBytes(ctx, s, k, v, backend.Cond{}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	stored := rawObjects(t, raw)
	for k, v := range stored {
		for _, leak := range []string{"secret", h, h[:32], h[2:34]} {
			if strings.Contains(k, leak) || bytes.Contains(v, []byte(leak)) {
				t.Errorf("stored %s shows %q", k, leak)
			}
		}
	}
	for k, v := range keys {
		got, info, err := backend.ReadAll(ctx, s, k, backend.GetOptions{}, 0)
		if err != nil || !bytes.Equal(got, v) || info.Size != int64(len(v)) || info.Key != k {
			t.Errorf("read back %s: %q %+v %v", k, got, info, err)
		}
		st, err := s.Stat(ctx, k)
		if err != nil || st.Size != int64(len(v)) {
			t.Errorf("stat %s: %+v %v", k, st, err)
		}
	}
	// Listings give back the plain keys, in order, with plain sizes.
	var listed []string
	err := s.List(ctx, "", backend.ListOptions{PageSize: 3}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			if !strings.HasPrefix(o.Key, seal.KeysPrefix) {
				listed = append(listed, o.Key)
				if o.Size != int64(len(keys[o.Key])) {
					t.Errorf("listed %s of %d bytes, want %d", o.Key, o.Size, len(keys[o.Key]))
				}
			}
		}
		return nil
	})
	if err != nil || len(listed) != len(keys) {
		t.Fatalf("listed %v, %v", listed, err)
	}
	for i := 1; i < len(listed); i++ {
		if listed[i-1] >= listed[i] {
			t.Fatalf("listing out of order: %v", listed)
		}
	}
	for prefix, want := range map[string]int{
		".silt/objects/": 1, ".silt/objects/" + h[:2] + "/": 1, ".silt/log/0000000000000000000": 1,
		".silt/control/secret-": 1, ".silt/control/secret-run/": 1, ".silt/shards/" + h[:4]: 1,
		"secret-namespace/": 1, "secret": 1, ".silt/locks/": 1, ".silt/pages/": 0,
	} {
		n := 0
		if err := s.List(ctx, prefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error { n += len(page); return nil }); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("List(%q) = %d objects, want %d", prefix, n, want)
		}
	}
}

func TestSeal_RangedReadOfContentIsOneRangedRead(t *testing.T) {
	s, _ := newSealed(t)
	ctx := t.Context()
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	h := sha(data)
	k := ".silt/packs/" + h[:2] + "/" + h
	if _, err := backend.PutBytes(ctx, s, k, data, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []backend.Range{{Offset: 0, Length: 1}, {Offset: 65_535, Length: 3}, {Offset: 123_457, Length: 76_543}} {
		got, info, err := backend.ReadAll(ctx, s, k, backend.GetOptions{Range: &r}, 0)
		if err != nil || !bytes.Equal(got, data[r.Offset:r.End()]) || info.Size != int64(len(data)) {
			t.Fatalf("range %+v: %d bytes, %+v, %v", r, len(got), info, err)
		}
	}
}

func TestSeal_TamperedTruncatedOrMovedObjectIsAuthError(t *testing.T) {
	s, raw := newSealed(t)
	ctx := t.Context()
	a, b := ".silt/log/00000000000000000001.json", ".silt/log/00000000000000000002.json"
	for _, k := range []string{a, b} {
		if _, err := backend.PutBytes(ctx, s, k, []byte(`{"seq":"`+k+`"}`), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	ra, _, _ := backend.ReadAll(ctx, raw, a, backend.GetOptions{}, 0)
	rb, _, _ := backend.ReadAll(ctx, raw, b, backend.GetOptions{}, 0)
	flipped := bytes.Clone(ra)
	flipped[len(flipped)-20] ^= 1
	for name, bad := range map[string][]byte{
		"flipped": flipped, "truncated": ra[:len(ra)-1], "moved": rb,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := backend.PutBytes(ctx, raw, a, bad, backend.Cond{}); err != nil {
				t.Fatal(err)
			}
			_, _, err := backend.ReadAll(ctx, s, a, backend.GetOptions{}, 0)
			var be *backend.Error
			if !errors.Is(err, seal.ErrAuth) || !errors.As(err, &be) || be.Key != a || backend.IsRetryable(err) {
				t.Fatalf("read of a %s object: %v", name, err)
			}
		})
	}
	if _, err := backend.PutBytes(ctx, raw, a, []byte(`{"plain":true}`), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := backend.ReadAll(ctx, s, a, backend.GetOptions{}, 0); !errors.Is(err, seal.ErrNotSealed) {
		t.Fatalf("read of a plain object: %v", err)
	}
}

func TestSeal_Keys_AddRotateRemoveWithoutRewritingData(t *testing.T) {
	s, raw := newSealed(t)
	ctx := t.Context()
	k := ".silt/manifest.json"
	if _, err := backend.PutBytes(ctx, s, k, []byte("state"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	before := rawObjects(t, raw)[k]
	ring, kf, err := seal.Unlock(ctx, raw, pass)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := seal.Unlock(ctx, raw, []byte("wrong")); !errors.Is(err, seal.ErrWrongPassphrase) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	if err := seal.RemoveKey(ctx, raw, kf.ID); !errors.Is(err, seal.ErrLastKey) {
		t.Fatalf("remove the last key: %v", err)
	}
	second := []byte("second passphrase")
	kf2, err := seal.AddKey(ctx, raw, ring, second, crypt.TestKDFParams, "ci")
	if err != nil {
		t.Fatal(err)
	}
	third := []byte("rotated passphrase")
	kf3, err := seal.Rotate(ctx, raw, ring, kf, third, crypt.TestKDFParams)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := seal.Unlock(ctx, raw, pass); !errors.Is(err, seal.ErrWrongPassphrase) {
		t.Fatalf("the rotated-away passphrase still opens: %v", err)
	}
	for _, p := range [][]byte{second, third} {
		b, err := seal.Open(ctx, raw, p)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := backend.ReadAll(ctx, b, k, backend.GetOptions{}, 0)
		if err != nil || string(got) != "state" {
			t.Fatalf("read with a new key: %q %v", got, err)
		}
	}
	if err := seal.RemoveKey(ctx, raw, kf2.ID); err != nil {
		t.Fatal(err)
	}
	files, _, err := seal.Keys(ctx, raw)
	if err != nil || len(files) != 1 || files[0].ID != kf3.ID {
		t.Fatalf("keys after rotate and remove: %v %v", files, err)
	}
	if after := rawObjects(t, raw)[k]; !bytes.Equal(after, before) {
		t.Fatal("key management rewrote data")
	}
	if _, _, err := seal.Init(ctx, raw, pass, crypt.TestKDFParams, ""); !errors.Is(err, seal.ErrAlreadyEncrypted) {
		t.Fatalf("second init: %v", err)
	}
}

func TestSeal_Init_RefusesAPlainIndex_AndOpenOfPlainBucketIsPlain(t *testing.T) {
	ctx := context.Background()
	raw := backend.Production(mem.New())
	if _, err := backend.PutBytes(ctx, raw, ".silt/manifest.json", []byte("{}"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := seal.Init(ctx, raw, pass, crypt.TestKDFParams, ""); !errors.Is(err, seal.ErrNotEmpty) {
		t.Fatalf("init over a plain index: %v", err)
	}
	b, err := seal.Open(ctx, raw, pass)
	if err != nil || b != raw {
		t.Fatalf("open of a plain bucket with a passphrase: %v %v", b, err)
	}
}

// A stray key file (a lost Init race, or planted) that opens with the
// passphrase to another ring is not the bucket's key.
func TestSeal_Unlock_IgnoresKeyFileOfAnotherRing(t *testing.T) {
	_, raw := newSealed(t)
	ctx := t.Context()
	other, _ := crypt.NewKeyring()
	kf, _ := crypt.Wrap(other, []byte("attacker"), crypt.TestKDFParams, "")
	if _, err := backend.PutBytes(ctx, raw, seal.KeysPrefix+kf.ID+".json", crypt.EncodeKeyFile(kf), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := seal.Unlock(ctx, raw, []byte("attacker")); !errors.Is(err, seal.ErrWrongPassphrase) {
		t.Fatalf("a key file of another ring unlocked: %v", err)
	}
}

func Example() {
	ctx := context.Background()
	raw := backend.Production(mem.New()) // backend.Open(ctx, "s3://bucket") in use
	b, kf, err := seal.Init(ctx, raw, []byte("passphrase"), crypt.TestKDFParams, "laptop")
	if err != nil {
		panic(err)
	}
	backend.PutBytes(ctx, b, ".silt/control/run/1", []byte("plain to the caller"), backend.Cond{})
	r, _, _ := b.Get(ctx, ".silt/control/run/1", backend.GetOptions{})
	got, _ := io.ReadAll(r)
	fmt.Println(string(got), len(kf.ID))
	// Output: plain to the caller 16
}
