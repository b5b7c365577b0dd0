package main

import flag "github.com/spf13/pflag"

// filters are the --exclude and --include flags of the commands that walk
// or pull the cache: gitignore-syntax rules added to the cache's
// .siltignore for this command (see the README's "Excludes").
type filters struct{ exclude, include stringsFlag }

func filterFlags(fs *flag.FlagSet) *filters {
	f := &filters{}
	fs.Var(&f.exclude, "exclude", "never sync paths matching this gitignore-syntax rule, as a line of .siltignore (repeatable)")
	fs.Var(&f.include, "include", "sync paths matching this gitignore-syntax rule whatever excludes them (repeatable)")
	return f
}
