package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Profiling is for benchmarks (bench/peers' -pprof), not for users, so it
// is switched on by the environment and has no flag: a profile path in
// SILT_CPUPROFILE or SILT_MEMPROFILE makes one run write that profile.
const (
	envCPUProfile = "SILT_CPUPROFILE"
	envMemProfile = "SILT_MEMPROFILE"
)

// startProfiles starts what the environment asks for and returns the
// function that writes the profiles out; the run's exit code is kept, and
// a profile that cannot be written is said on stderr.
func startProfiles() (stop func(), err error) {
	cpu, mem := os.Getenv(envCPUProfile), os.Getenv(envMemProfile)
	if cpu == "" && mem == "" {
		return func() {}, nil
	}
	var cf *os.File
	if cpu != "" {
		if cf, err = os.Create(cpu); err != nil {
			return nil, fmt.Errorf("%s: %w", envCPUProfile, err)
		}
		if err := pprof.StartCPUProfile(cf); err != nil {
			cf.Close()
			return nil, fmt.Errorf("%s: %w", envCPUProfile, err)
		}
	}
	return func() {
		if cf != nil {
			pprof.StopCPUProfile()
			if err := cf.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "silt: %s: %v\n", envCPUProfile, err)
			}
		}
		if mem != "" {
			if err := writeHeapProfile(mem); err != nil {
				fmt.Fprintf(os.Stderr, "silt: %s: %v\n", envMemProfile, err)
			}
		}
	}, nil
}

// writeHeapProfile writes the allocations of the whole run (the "allocs"
// profile: pprof -sample_index=alloc_space shows where bytes went, and
// inuse_space what was live at the last GC).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
