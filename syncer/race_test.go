//go:build race

package syncer_test

// raceEnabled: the race detector adds its own allocations, so byte
// counts of a push are only asserted without it.
const raceEnabled = true
