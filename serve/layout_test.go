package serve_test

import (
	"testing"

	"github.com/siltsync/silt/serve"
)

func TestDefaultLazy_SelectsRawUnderData(t *testing.T) {
	for p, want := range map[string]bool{
		"data/aws/vpc/m1/raw":  true,
		"data/raw":             true,
		"data/aws/vpc/m1/meta": false,
		"data/aws/raw.json":    false,
		"models/raw":           false,
		"raw":                  false,
		"database/x/raw":       false,
	} {
		if got := serve.DefaultLazy(p); got != want {
			t.Errorf("DefaultLazy(%q) = %v, want %v", p, got, want)
		}
	}
}
