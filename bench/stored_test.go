package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/bench/peers"
	"github.com/siltsync/silt/syncer"
)

// envStored runs the stored-bytes table at 10,010 files (issue 35's
// target: at least 3x smaller than the plain bytes on a YAML/JSON tree).
const envStored = "SILT_BENCH_STORED"

// hostTree writes models the way a host keeps them: per model, versions
// of a resource's JSON state as a cloud API returns it and a YAML
// metadata file, then a latest marker; ids, times and sizes vary per
// model and version, as they do in a real bucket.
func hostTree(t testing.TB, dir string, models int) int64 {
	t.Helper()
	r := rand.New(rand.NewPCG(34, 35))
	var total int64
	put := func(p string, data []byte) {
		if err := peers.WriteFile(dir, p, data, time.Unix(1_700_000_000, 0)); err != nil {
			t.Fatal(err)
		}
		total += int64(len(data))
	}
	kinds := []string{"aws/ec2/instance", "aws/ec2/vpc", "aws/s3/bucket", "gcp/compute/network", "k8s/deployment"}
	for m := range models {
		kind := kinds[m%len(kinds)]
		id := fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, r.Uint32()&0xfff, r.Uint64()&0xffffffffffff)
		dirm := "data/" + kind + "/" + id + "/state/"
		for v := 1; v <= 5; v++ {
			var b strings.Builder
			fmt.Fprintf(&b, "{\n  \"Reservations\": [\n    {\n      \"ReservationId\": \"r-%017x\",\n      \"OwnerId\": \"%012d\",\n      \"Instances\": [\n", r.Uint64()&0xfffffffffffffff, r.Int64N(1e12))
			for i := range 1 + r.IntN(3) {
				if i > 0 {
					b.WriteString(",\n")
				}
				fmt.Fprintf(&b, `        {
          "InstanceId": "i-%017x",
          "ImageId": "ami-%017x",
          "InstanceType": "%s",
          "LaunchTime": "2026-%02d-%02dT%02d:%02d:%02d+00:00",
          "Placement": {"AvailabilityZone": "eu-west-%d%c", "Tenancy": "default"},
          "PrivateIpAddress": "10.%d.%d.%d",
          "State": {"Code": 16, "Name": "running"},
          "SubnetId": "subnet-%017x",
          "VpcId": "vpc-%017x",
          "SecurityGroups": [{"GroupName": "web-%d", "GroupId": "sg-%017x"}],
          "Tags": [{"Key": "Name", "Value": "model-%d-v%d"}, {"Key": "team", "Value": "platform"}, {"Key": "env", "Value": "prod"}],
          "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeId": "vol-%017x", "Status": "attached", "DeleteOnTermination": true}}]
        }`, r.Uint64()&0xfffffffffffffff, r.Uint64()&0xfffffffffffffff, []string{"t3.micro", "m6i.large", "c7g.xlarge"}[r.IntN(3)],
					1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 1+r.IntN(3), 'a'+rune(r.IntN(3)),
					r.IntN(256), r.IntN(256), r.IntN(256), r.Uint64()&0xfffffffffffffff, r.Uint64()&0xfffffffffffffff, m%40, r.Uint64()&0xfffffffffffffff, m, v, r.Uint64()&0xfffffffffffffff)
			}
			b.WriteString("\n      ]\n    }\n  ]\n}\n")
			put(dirm+fmt.Sprint(v)+"/raw", []byte(b.String()))
			put(dirm+fmt.Sprint(v)+"/metadata.yaml", fmt.Appendf(nil, `id: %s
type: %s
version: %d
createdAt: "2026-%02d-%02dT%02d:%02d:%02dZ"
createdBy: workflow/deploy-%d
size: %d
checksum: sha256:%016x%016x%016x%016x
tags:
  team: platform
  env: prod
dependencies:
  - data/aws/ec2/vpc/%08x
  - data/aws/ec2/subnet/%08x
`, id, kind, v, 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), m%17, b.Len(), r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), r.Uint32(), r.Uint32()))
		}
		put(dirm+"latest", []byte("5\n"))
	}
	return total
}

// storedBytes pushes the tree in dir (plain bytes: plain) into a new
// file:// bucket as the CLI does and returns the bucket's bytes by
// prefix under .silt/.
func storedBytes(t testing.TB, dir string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	bucket := t.TempDir()
	b, err := backend.Open(ctx, "file://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Push(ctx, syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	by := map[string]int64{}
	err = filepath.WalkDir(filepath.Join(bucket, ".silt"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(bucket, ".silt"), p)
		by[strings.SplitN(rel, string(filepath.Separator), 2)[0]] += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return by
}

// A host's YAML and JSON state is stored in at most a third of its bytes
// (format 6's packed members are zstd frames), and its index in a
// fraction of the JSON.
func TestStoredBytes_HostTree_AThirdOrLess(t *testing.T) {
	dir := t.TempDir()
	plain := hostTree(t, dir, 40)
	by := storedBytes(t, dir)
	data := by["packs"] + by["objects"]
	if data*3 > plain {
		t.Errorf("%d bytes of YAML and JSON stored in %d data bytes (%.1fx), want at least 3x smaller", plain, data, float64(plain)/float64(data))
	}
}

// TestStoredBytes_Table logs the bytes a cold push stores for the peers
// benchmark's tree and for a host tree, 10,010 files each.
func TestStoredBytes_Table(t *testing.T) {
	if os.Getenv(envStored) == "" {
		t.Skip("set " + envStored + "=1 for the stored-bytes table")
	}
	for _, tree := range []struct {
		name  string
		write func(dir string) int64
	}{
		{"peers tree (random hex, 5 KiB files)", func(dir string) int64 {
			tr := peers.NewTree(10_010)
			if err := tr.Write(dir, time.Unix(1_700_000_000, 0)); err != nil {
				t.Fatal(err)
			}
			return int64(tr.Files()) * peers.FileSize
		}},
		{"host tree (JSON state, YAML metadata)", func(dir string) int64 { return hostTree(t, dir, 910) }},
	} {
		dir := t.TempDir()
		plain := tree.write(dir)
		by := storedBytes(t, dir)
		data := by["packs"] + by["objects"]
		var total int64
		for _, n := range by {
			total += n
		}
		t.Logf("| %s | %d | %d (%.2fx) | %d | %d | %d |", tree.name, plain, data, float64(plain)/float64(data), by["shards"], by["pages"]+by["checkpoints"]+by["log"]+by["manifests"], total)
	}
}
