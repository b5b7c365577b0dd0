package conformance

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
)

func TestSyncerModelLiveness_Mem(t *testing.T) {
	RunSyncerModelLiveness(t, func(t *testing.T) backend.Backend { return mem.New() }, ModelBudget{Checks: 10, Steps: 20})
}
