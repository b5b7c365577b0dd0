package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"

	flag "github.com/spf13/pflag"
)

// Stamped by release builds (scripts/release.sh):
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=abc123 -X main.date=2026-12-01T00:00:00Z"
//
// Left empty, they come from the build info that go build and go install
// record (module version, vcs.revision, vcs.time).
var version, commit, date string

// buildInfo is what silt version prints.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func readBuildInfo() buildInfo {
	v := buildInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && v.Commit == "":
				v.Commit = s.Value
			case s.Key == "vcs.time" && v.Date == "":
				v.Date = s.Value
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

var versionCmd = &command{
	name:    "version",
	summary: "print the version, commit, build date and Go version of silt, and the stores it links",
	example: "silt version\nsilt version --json",
	setup: func(c *cli, _ *flag.FlagSet) runFunc {
		return func(context.Context, []string) error {
			v := readBuildInfo()
			if c.json {
				return c.printJSON(map[string]any{"version": v.Version, "commit": v.Commit, "date": v.Date, "go": v.Go,
					"os": v.OS, "arch": v.Arch, "backends": schemes()})
			}
			or := func(s string) string {
				if s == "" {
					return "unknown"
				}
				return s
			}
			c.printf("silt %s\ncommit %s\nbuilt %s\n%s %s/%s; stores: %s\n", v.Version, or(v.Commit), or(v.Date), v.Go, v.OS, v.Arch, strings.Join(schemes(), ", "))
			return nil
		}
	},
}
