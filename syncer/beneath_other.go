//go:build !linux

package syncer

import "os"

// beneath is Linux's single-call path resolution (openat2); elsewhere every
// access goes through the cache's os.Root.
type beneath struct{}

func (l *local) statBeneath(string) (localFile, bool)    { return localFile{}, false }
func (l *local) openFileBeneath(string) (*os.File, bool) { return nil, false }
func (b *beneath) close() error                          { return nil }
