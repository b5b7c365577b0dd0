package s3_test

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/conformance"
)

// TestSyncer_Gofakes3_Model runs the model-based syncer test through the S3
// backend against gofakes3, a fresh bucket per sequence (a small budget;
// SILT_MODEL_BUDGET raises it).
func TestSyncer_Gofakes3_Model(t *testing.T) {
	f := newFake(t)
	conformance.RunSyncerModel(t, func(t *testing.T) backend.Backend {
		return f.open(t, s3.Config{DisableConditionalDelete: true})
	}, conformance.ModelBudget{Checks: 8, Steps: 15})
}
