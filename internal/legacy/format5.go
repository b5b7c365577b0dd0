package legacy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// delta5 is a format-5 log entry as silt wrote it before format 6: the
// shards set and deleted since seq-1 and the hashes of both states.
type delta5 struct {
	Format          int              `json:"format"`
	Seq             uint64           `json:"seq"`
	Prev            string           `json:"prev,omitempty"`
	State           string           `json:"state"`
	Set             []index.ShardRef `json:"set,omitempty"`
	Del             []string         `json:"del,omitempty"`
	ShardMaxEntries int              `json:"shard_max_entries,omitempty"`
	ShardMaxBytes   int              `json:"shard_max_bytes,omitempty"`
}

// genesisRoot5 is the root of a format-5 bucket's empty state: its marker
// and first hint.
func genesisRoot5() []byte {
	state := index.EncodeManifest(&index.Manifest{Format: index.DeltaFormat, Seq: 0, Shards: []index.ShardRef{}})
	data, err := json.Marshal(struct {
		Format int             `json:"format"`
		Seq    uint64          `json:"seq"`
		State  string          `json:"state"`
		Pages  []index.PageRef `json:"pages"`
	}{index.DeltaFormat, 0, sum(state), []index.PageRef{}})
	if err != nil {
		panic(err)
	}
	return data
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// commit5 is a format-5 commit: the entry of next's seq by
// create-if-absent, holding the delta from head's state (whose bytes
// head.Data are) and the hash of both. The bucket's first commit records
// format 5's byte bound, as format 5's writer did.
func commit5(ctx context.Context, b backend.Backend, head index.Head, next *index.Manifest) error {
	if next.ShardMaxBytes == 0 {
		next.ShardMaxBytes = index.DefaultShardMaxBytes
	}
	if next.ShardMaxEntries == 0 {
		next.ShardMaxEntries = index.DefaultShardMaxEntries
	}
	if head.Manifest.Seq != 0 {
		next.Prev = sum(head.Data)
	}
	d := delta5{Format: index.DeltaFormat, Seq: next.Seq, Prev: next.Prev, State: sum(index.EncodeManifest(next)),
		Set: next.Shards, ShardMaxEntries: next.ShardMaxEntries, ShardMaxBytes: next.ShardMaxBytes}
	for _, ref := range head.Manifest.Shards {
		if ref.Lo != "" {
			d.Del = append(d.Del, ref.Lo)
		}
	}
	data, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	_, err = backend.PutBytes(ctx, b, index.LogKey(next.Seq), data, backend.Cond{IfAbsent: true})
	return err
}
