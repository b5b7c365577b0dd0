package index_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// formatExamples returns FORMAT.md's ```json blocks under each "## " heading,
// with the elided hex ("3f0c…", "…64 lowercase hex…") made whole.
func formatExamples(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	hex64 := strings.Repeat("ab", 32)
	id := regexp.MustCompile(`"[0-9a-f]*…"`)
	out := map[string]string{}
	parts := strings.Split(string(data), "```json\n")
	for _, p := range parts[1:] {
		body := p[:strings.Index(p, "```")]
		body = strings.ReplaceAll(body, `"…64 lowercase hex…"`, `"`+hex64+`"`)
		body = id.ReplaceAllString(body, `"`+hex64[:32]+`"`)
		// The heading the block sits under: the last "## " before it.
		before := string(data)[:strings.Index(string(data), p)]
		heading := before[strings.LastIndex(before, "\n## ")+4:]
		heading = heading[:strings.Index(heading, "\n")]
		out[heading] = body
	}
	return out
}

// TestFormat_Examples_DecodeWithTheRealDecoders keeps FORMAT.md's JSON
// examples true: each decodes with the decoder silt reads that object with.
func TestFormat_Examples_DecodeWithTheRealDecoders(t *testing.T) {
	ex := formatExamples(t)
	for _, h := range []string{"Manifest", "Shard", "Operation statistics (JSON)"} {
		if ex[h] == "" {
			t.Fatalf("FORMAT.md has no JSON example under %q (found %d examples)", h, len(ex))
		}
	}
	if _, err := index.DecodeManifest(index.ManifestKey, []byte(ex["Manifest"])); err != nil {
		t.Errorf("FORMAT.md's manifest example: %v", err)
	}
	shard := []byte(ex["Shard"])
	if _, err := index.DecodeShard(index.ShardID(shard), index.All, shard); err != nil {
		t.Errorf("FORMAT.md's shard example: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(ex["Operation statistics (JSON)"])))
	dec.DisallowUnknownFields()
	var st syncer.Stats
	if err := dec.Decode(&st); err != nil || st.Op != "push" {
		t.Errorf("FORMAT.md's statistics example: %v (%+v)", err, st)
	}
}
