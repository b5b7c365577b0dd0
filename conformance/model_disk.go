package conformance

import (
	"errors"
	"sync/atomic"
	"syscall"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/internal/localhook"
)

// actDiskFull is the disk of a cache filling up under a pull: the k-th
// download write of the pull fails with ENOSPC, and every one after it,
// as a full disk does (issue 37: a pull that ran out of disk left a
// status saying "up to date"). The pull must fail with the typed error,
// keep every local edit (the pull checks), and Status must say a pull
// stopped part way until a whole pull succeeds (doPull's check).
func (m *modelRun) actDiskFull(t *rapid.T) {
	c := m.drawCache(t, "cache")
	k := int32(rapid.IntRange(1, 3).Draw(t, "failingWrite"))
	var scope []string
	if rapid.Bool().Draw(t, "scoped") {
		scope = []string{m.drawAnyModel(t)}
	}
	m.logf("c%d pull scope=%q on a disk full from its download write %d", c.id, scope, k)
	var writes, failed atomic.Int32
	unset := localhook.SetWriteFault(c.s.Root(), func(string) error {
		if writes.Add(1) < k {
			return nil
		}
		failed.Add(1)
		return syscall.ENOSPC
	})
	m.diskFull = &failed
	o := m.doPull(c, scope, false)
	m.diskFull = nil
	unset()
	if failed.Load() > 0 && !m.served { // the wire carries the message, not the errno
		m.expect(propDiskFullTyped, errors.Is(o.err, syscall.ENOSPC), "pull on a full disk: %v", o.err)
	}
}
