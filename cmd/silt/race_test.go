//go:build race

package main

// raceEnabled builds siltRaceBin with -race when the tests run with -race.
const raceEnabled = true
