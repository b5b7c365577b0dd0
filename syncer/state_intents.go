package syncer

import (
	"encoding/json"
	"fmt"
)

// bucketIntents holds the install intents of a pull whose downloads are
// not yet durable and recorded (see installBatch): path -> intent. Created
// on first use; the transaction that records the pull's files deletes its
// intents, so one left over names a file a crash may have torn.
var bucketIntents = []byte("intents")

// intent is what a pull was about to install at a path.
type intent struct {
	SHA256 string `json:"sha256"`
	Exec   bool   `json:"x,omitempty"`
}

// putIntents records the intents of one batch.
func (t stx) putIntents(in map[string]intent) error {
	b, err := t.tx.CreateBucketIfNotExists(bucketIntents)
	if err != nil {
		return err
	}
	for p, it := range in {
		v, _ := json.Marshal(it)
		if err := b.Put([]byte(p), v); err != nil {
			return err
		}
	}
	return nil
}

// dropIntents deletes the intents of these paths.
func (t stx) dropIntents(paths []string) error {
	b := t.tx.Bucket(bucketIntents)
	if b == nil {
		return nil
	}
	for _, p := range paths {
		if err := b.Delete([]byte(p)); err != nil {
			return err
		}
	}
	return nil
}

// intents returns every intent left in the state.
func (t stx) intents() (map[string]intent, error) {
	out := map[string]intent{}
	b := t.tx.Bucket(bucketIntents)
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		var it intent
		if err := json.Unmarshal(v, &it); err != nil {
			return fmt.Errorf("syncer: install intent %q: %w", k, err)
		}
		out[string(k)] = it
		return nil
	})
	return out, err
}
