package conformance

import (
	"slices"

	"github.com/siltsync/silt/syncer"
)

// propConflictRemembered: a conflict is remembered wherever it was found.
// The two-phase commit reported a lost race but did not remember it, so
// Status did not list it and Resolve needed Force (issue 20).
const propConflictRemembered property = "every conflict an operation reports is listed by the cache's status right after"

// checkRemembered checks that every conflict o reported is among those
// Status lists once it ended.
func (m *modelRun) checkRemembered(c *mcache, o opOut, st syncer.Status) {
	if slices.ContainsFunc(o.st.Changes, func(ch syncer.Change) bool { return ch.DryRun }) {
		return // a dry run remembers nothing
	}
	for _, cf := range o.st.Conflicts {
		listed := slices.ContainsFunc(st.Conflicts, func(r syncer.ConflictRecord) bool { return r.Path == cf.Path })
		m.expect(propConflictRemembered, listed, "cache %d: %s reported a conflict on %q (%s) that status does not list", c.id, o.st.Op, cf.Path, cf.Reason)
	}
}
