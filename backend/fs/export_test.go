package fs

import "time"

// SetSweepEvery sets how often Puts sweep the temp directory, for tests.
func SetSweepEvery(d time.Duration) (restore func()) {
	old := sweepEvery
	sweepEvery = d
	return func() { sweepEvery = old }
}
