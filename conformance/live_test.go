package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
)

type liveResult struct {
	name            string
	passed, skipped bool
	msg             string
}

func runLiveOn(t *testing.T, ctx context.Context, newBackend func() (backend.Backend, error)) (int, []liveResult) {
	t.Helper()
	var got []liveResult
	failed := RunLive(ctx, newBackend, func(name string, passed, skipped bool, msg string) {
		got = append(got, liveResult{name, passed, skipped, msg})
	})
	if len(got) != len(allChecks()) {
		t.Fatalf("report called %d times, want once per check (%d)", len(got), len(allChecks()))
	}
	return failed, got
}

func TestRunLive_Mem_PassesEveryCheckInOrder(t *testing.T) {
	failed, got := runLiveOn(t, t.Context(), func() (backend.Backend, error) { return mem.New(), nil })
	if failed != 0 {
		for _, r := range got {
			if !r.passed {
				t.Errorf("%s: %s", r.name, r.msg)
			}
		}
	}
	for i, c := range allChecks() {
		if got[i].name != c.name {
			t.Errorf("report %d is %q, want %q", i, got[i].name, c.name)
		}
	}
}

func TestRunLive_IgnoredConditions_FailAndFatalEndsOnlyThatCheck(t *testing.T) {
	failed, got := runLiveOn(t, t.Context(), func() (backend.Backend, error) { return ignoresConds{mem.New()}, nil })
	if failed == 0 {
		t.Fatal("a backend that ignores conditions passed every check")
	}
	for _, r := range got {
		if r.name == "Put_IfAbsent_SecondCreateFailsAndKeepsFirst" && r.passed {
			t.Errorf("%s passed on a backend that ignores IfAbsent", r.name)
		}
		if !r.passed && r.msg == "" {
			t.Errorf("%s failed without a message", r.name)
		}
	}
}

func TestRunLive_UnclaimedCapability_ReportsSkip(t *testing.T) {
	_, got := runLiveOn(t, t.Context(), func() (backend.Backend, error) { return refusesConds{mem.New()}, nil })
	skips := 0
	for _, r := range got {
		if r.skipped {
			skips++
			if !r.passed || !strings.Contains(r.msg, "Capabilities()") {
				t.Errorf("%s: skipped but passed=%v msg=%q", r.name, r.passed, r.msg)
			}
		}
	}
	if skips == 0 {
		t.Error("no check skipped on a backend that claims no condition")
	}
}

func TestRunLive_FactoryError_FailsEachCheck(t *testing.T) {
	failed, got := runLiveOn(t, t.Context(), func() (backend.Backend, error) { return nil, errors.New("no credentials") })
	if failed != len(allChecks()) {
		t.Errorf("failed = %d, want every check", failed)
	}
	if !strings.Contains(got[0].msg, "no credentials") {
		t.Errorf("message %q does not carry the factory's error", got[0].msg)
	}
}

func TestRunLive_CancelledContext_FailsRemainingChecks(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	failed, _ := runLiveOn(t, ctx, func() (backend.Backend, error) { return mem.New(), nil })
	if failed != len(allChecks()) {
		t.Errorf("failed = %d after cancel, want every check", failed)
	}
}

func TestRunLiveModel_Mem_BothModesPass(t *testing.T) {
	var got []liveResult
	failed := RunLiveModel(t.Context(), func() (backend.Backend, error) { return mem.New(), nil }, ModelBudget{Checks: 3, Steps: 10}, func(name string, passed, skipped bool, msg string) {
		got = append(got, liveResult{name, passed, skipped, msg})
	})
	if failed != 0 || len(got) != 2 {
		t.Fatalf("failed %d, reports %+v", failed, got)
	}
}

func TestRunLiveModel_DroppedWrites_Fails(t *testing.T) {
	failed := RunLiveModel(t.Context(), func() (backend.Backend, error) { return dropsCondWrites{mem.New()}, nil }, ModelBudget{Checks: 5, Steps: 10}, func(string, bool, bool, string) {})
	if failed == 0 {
		t.Error("the model passed on a backend that drops conditional writes")
	}
}
