package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// seedNamespace commits about n entries: models of a 3-segment type with 10
// versions and a latest marker each (flat, so seeding 50k files does not
// also create 50k directories).
func seedNamespace(t *testing.T, w *host, n int) []string {
	t.Helper()
	var models []string
	files := map[string]string{}
	for i := 0; len(files) < n; i++ {
		id := fmt.Sprintf("m%05d", i)
		models = append(models, id)
		for v := 1; v <= 10; v++ {
			files[fmt.Sprintf("data/aws/ec2/vpc/%s/%d.yaml", id, v)] = fmt.Sprint(id, v)
		}
		files[fmt.Sprintf("data/aws/ec2/vpc/%s/latest", id)] = "10"
	}
	for p, c := range files {
		w.write(p, c)
	}
	w.mark("data/aws/ec2/vpc") // one directory mark covers them all
	w.push()
	return models
}

// Seed 2590/3198: a pull scoped to one model costs what the model costs,
// whatever the size of the namespace.
func checkSeed2590_ScopedPullIsBoundedByScope(t *testing.T, nb Factory) {
	CheckScopedPullBounded(t, nb, []int{200, 1500}, 50)
}

// CheckScopedPullBounded commits namespaces of each size (in entries) with
// shards of at most shardMax entries, and checks that a pull scoped to one
// model costs the same requests in every one: cold, unchanged, and
// unchanged after a peer committed elsewhere (at most 2 requests, never a
// list). It is seed 2590/3198 at a scale the caller chooses.
func CheckScopedPullBounded(t *testing.T, nb Factory, sizes []int, shardMax int) {
	type cost struct{ cold, unchanged, afterPeer wrap.Counts }
	var costs []cost
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			bk := newBucket(t, nb)
			w := bk.host(withShardMax(shardMax))
			models := seedNamespace(t, w, n)
			// The scoped model sits in the first shard and the peer writes to
			// the last, in both namespaces; a model that straddles a shard
			// boundary costs one shard more, whatever the namespace size.
			scope := "data/aws/ec2/vpc/" + models[1]

			r := bk.host(withShardMax(shardMax))
			c := r.counted()
			st := r.pull(scope)
			mustEqual(t, "downloaded", st.Files.Downloaded, 11)
			mustEqual(t, "examined", st.Local.Examined, 11)
			cold := c.Counts()
			// The one listing a cold read may make is of one block of the
			// log's entries (a thousand keys at most), never of the
			// namespace.
			if cold.List > 1 {
				t.Errorf("cold scoped pull listed %d times, want at most once (the log's block)", cold.List)
			}
			for _, r := range c.Log() {
				if r.Verb == wrap.VerbList && !strings.HasPrefix(r.Key, index.LogPrefix) {
					t.Errorf("cold scoped pull listed %q, outside the log", r.Key)
				}
			}
			for _, k := range keysRead(c.Log()) {
				if !strings.HasPrefix(k, ".silt/") && !strings.HasPrefix(k, scope+"/") {
					t.Errorf("scoped pull read %s outside its scope", k)
				}
			}

			c.Reset()
			st = r.pull(scope)
			unchanged := c.Counts()
			mustEqual(t, "unchanged: examined", st.Local.Examined, 11)

			// Peers commit to another model; the scope is still unchanged.
			p := bk.host(withShardMax(shardMax))
			p.writeMark(map[string]string{"data/aws/ec2/vpc/" + models[len(models)-1] + "/11.yaml": "peer"})
			p.push()
			c.Reset()
			st = r.pull(scope)
			afterPeer := c.Counts()
			mustEqual(t, "after peer: downloaded", st.Files.Downloaded, 0)
			if afterPeer.Total() > 2 || afterPeer.List != 0 {
				t.Errorf("unchanged scope after a peer commit cost %+v, want at most 2 requests and no list", afterPeer)
			}
			// Bytes differ (the manifest lists every shard); requests do not.
			reqs := func(c wrap.Counts) wrap.Counts { c.BytesDown, c.BytesUp = 0, 0; return c }
			costs = append(costs, cost{reqs(cold), reqs(unchanged), reqs(afterPeer)})
		})
	}
	if len(costs) == 2 && costs[0] != costs[1] {
		t.Errorf("scoped pull cost depends on namespace size:\n%d entries: %+v\n%d entries: %+v", sizes[0], costs[0], sizes[1], costs[1])
	}
}

// Seed 2366: a directory mark maps to the shards that hold the directory,
// for model types of any depth.
func checkSeed2366_DirectoryMarkPushesExactlyTheNewFile(t *testing.T, nb Factory) {
	for _, typ := range []string{"aws/ec2", "aws/ec2/vpc", "@test/aws/ec2/vpc"} {
		t.Run(fmt.Sprintf("%d-segment", strings.Count(typ, "/")+1), func(t *testing.T) {
			bk := newBucket(t, nb)
			a := bk.host(withShardMax(8)) // the model spans several shards
			for _, other := range []string{"a0", "m0", "z9"} {
				a.writeMark(modelFiles(typ, other, 4))
			}
			dir := "data/" + typ + "/m1/state-main"
			for v := 1; v <= 10; v++ {
				a.write(fmt.Sprintf("%s/%d/raw", dir, v), fmt.Sprint("v", v))
			}
			a.mark(dir)
			a.push()

			c := a.counted()
			a.write(dir+"/11/raw", "v11")
			a.mark(dir)
			st := a.push()
			mustEqual(t, "uploaded", st.Files.Uploaded, 1)
			if got := dataPuts(c.Log()); !slices.Equal(got, []string{objKey("v11")}) {
				t.Errorf("data puts = %v, want only %s/11/raw", got, dir)
			}

			a.remove(dir + "/3/raw")
			a.mark(dir)
			st = a.push()
			mustEqual(t, "deleted", st.Files.Deleted, 1)
			if bk.committed(dir + "/3/raw") {
				t.Errorf("%s/3/raw still in the bucket", dir)
			}
			b := bk.host()
			b.pull()
			if _, ok := b.read(dir + "/3/raw"); ok {
				t.Errorf("a fresh cache still gets %s/3/raw", dir)
			}
			if got, _ := b.read(dir + "/11/raw"); got != "v11" {
				t.Errorf("fresh cache: 11/raw = %q", got)
			}
		})
	}
}

// Seed 3193: a push with nothing to send vouches for nothing, so a later
// full pull still fetches what a peer committed outside an earlier scope.
func checkSeed3193_NoOpPushNeverVouchesForUnreadShards(t *testing.T, nb Factory) {
	for _, tc := range []struct {
		name       string
		shardMax   int
		newProcess bool
	}{
		{"separate shards", 8, false},
		{"one shard", 1000, false},
		{"separate shards, push in a new process", 8, true},
		{"one shard, push in a new process", 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bk := newBucket(t, nb)
			a, b := bk.host(withShardMax(tc.shardMax)), bk.host(withShardMax(tc.shardMax))
			a.writeMark(modelFiles("command/shell", "x", 5))
			a.writeMark(modelFiles("command/shell", "y", 5))
			a.push()
			a.pull()
			b.pull()

			b.writeMark(map[string]string{"data/command/shell/y/state/6/raw": "from b"})
			b.push()

			a.pull("data/command/shell/x")
			if tc.newProcess {
				a.restart()
			}
			a.mark("data/command/shell/x") // dirty, but nothing changed
			a.push()
			a.push()

			st := a.pull()
			mustEqual(t, "downloaded", st.Files.Downloaded, 1)
			if got, _ := a.read("data/command/shell/y/state/6/raw"); got != "from b" {
				t.Errorf("a never got b's commit: %q", got)
			}
		})
	}
}

// Seed "localMtime clobbered": per-machine state never leaves the machine,
// so pull then push uploads nothing.
func checkSeedLab_PullThenPushUploadsNothing(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	w := bk.host()
	for i := range 10 {
		w.writeMark(modelFiles("aws/s3", fmt.Sprint("b", i), 3))
	}
	w.push()

	r := bk.host()
	st := r.pull()
	mustEqual(t, "pulled", st.Files.Downloaded, 40)

	c := r.counted()
	st = r.push()
	mustEqual(t, "requests of a push with nothing dirty", c.Counts().Total(), int64(0))

	check := func(what string) {
		t.Helper()
		c.Reset()
		if err := r.s.MarkAllDirty(); err != nil {
			t.Fatal(err)
		}
		st := r.push()
		mustEqual(t, what+": uploaded", st.Files.Uploaded, 0)
		if got := dataPuts(c.Log()); len(got) != 0 {
			t.Errorf("%s: data puts %v", what, got)
		}
	}
	check("same process")
	r.restart()
	c = r.counted()
	check("new process")

	w.writeMark(map[string]string{"data/unrelated/f": "peer"})
	w.push()
	r.pull()
	check("after an unrelated peer commit")
	_ = syncer.Stats{}
}
