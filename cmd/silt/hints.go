package main

import (
	"os"
	"regexp"
	"strings"
)

// Hints and Next: lines print commands meant to be pasted: each argument
// shell-quoted, and --dir given wherever the command would not find the
// cache from the working directory by itself.

// shellSafe matches the arguments a POSIX shell takes as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it: a URL with &,
// ?, * or a space, say.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dirOpt is " --dir DIR" for a command about the cache dir printed in a
// hint: when the user gave --dir, or when the working directory is not
// inside the cache; "" when a command run here finds it by itself.
func dirOpt(given bool, dir string) string {
	if !given && os.Getenv(envDir) == "" {
		if wd, err := os.Getwd(); err == nil {
			if _, inside := within(dir, wd); inside {
				return ""
			}
		}
	}
	if !given && os.Getenv(envDir) != "" {
		return "" // $SILT_DIR names it
	}
	return " --dir " + shellQuote(dir)
}

// dirOrDot is dir, or "." for the working directory.
func dirOrDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// lsArgs are the arguments of a silt ls that lists the bucket o reads,
// for a hint: its URL, quoted, or (the URL being the binding's) the
// cache's --dir when needed.
func (o *onBucket) lsArgs() string {
	if o.cache == "" {
		return " " + shellQuote(o.url)
	}
	return o.dirOpt
}

// dirOpt is dirOpt for the cache this invocation found (findDir).
func (c *cli) dirOpt(dir string) string { return dirOpt(c.dirGiven, dir) }
