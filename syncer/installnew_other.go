//go:build !linux

package syncer

import (
	"io"

	"github.com/siltsync/silt/index"
)

// dirFDs holds nothing here: new files take the portable install.
type dirFDs struct{}

func (*dirFDs) forget(string) {}
func (*dirFDs) close()        {}

// installNew is never the way here (no renameat2): handled is false.
func (l *local) installNew(*installBatch, string, io.Reader, index.Entry) (installed, bool, error) {
	return installed{}, false, nil
}
