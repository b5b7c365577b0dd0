package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// completeURL completes a bucket URL: a scheme silt knows, then for
// file:// the directories on this machine. A later argument (a path in
// the bucket, or export's destination) completes as a file name.
func completeURL(args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	if rest, ok := strings.CutPrefix(toComplete, "file://"); ok {
		return completeFileURL(rest), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	if strings.Contains(toComplete, "://") {
		return nil, cobra.ShellCompDirectiveNoFileComp // a bucket name: silt does not list buckets
	}
	var out []string
	for _, s := range schemes() {
		if u := s + "://"; strings.HasPrefix(u, toComplete) {
			out = append(out, u)
		}
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// completeFileURL lists the directories a file:// URL's path may go on
// with: "file:///srv/b" completes to "file:///srv/bucket/".
func completeFileURL(p string) []string {
	dir, base := filepath.Split(filepath.FromSlash(p))
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := p[:strings.LastIndex(p, "/")+1] // the path up to its last slash
	var out []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), base) || (strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		out = append(out, "file://"+prefix+e.Name()+"/")
	}
	return out
}
