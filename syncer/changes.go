package syncer

// Action names what happened to one file; see [Change].
type Action string

// The actions a [Change] reports.
const (
	ActionUpload   Action = "upload"   // bytes sent to the store
	ActionDedup    Action = "dedup"    // pushed, the store already held the bytes
	ActionDownload Action = "download" // fetched into the cache
	ActionDelete   Action = "delete"   // removed from the remote index
	ActionRemove   Action = "remove"   // removed from the cache
	ActionConflict Action = "conflict" // both sides changed; the local copy was kept
	ActionSkip     Action = "skip"     // not synced, for Reason
	ActionLazy     Action = "lazy"     // recorded without its bytes (MetadataOnly)
	ActionResolve  Action = "resolve"  // a conflict settled by Resolve
)

// DefaultMaxChanges bounds Stats.Changes when Config.MaxChanges is zero.
const DefaultMaxChanges = 10000

// Change is one file's outcome in an operation. A dry run reports the
// changes it would make.
type Change struct {
	Path   string `json:"path"`
	Action Action `json:"action"`
	Bytes  int64  `json:"bytes,omitempty"`
	Reason string `json:"reason,omitempty"`
	// DryRun is set when nothing was done: the change is planned only.
	DryRun bool `json:"dry_run,omitempty"`
}

// change records c in the stats (up to the bound, counting the rest) and
// passes it to Config.OnChange. Calls are serialised by o.mu, so OnChange
// sees changes one at a time, in the order they completed.
func (o *op) change(c Change) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.changeLocked(c)
}

func (o *op) changeLocked(c Change) {
	o.settle(c)
	o.logChange(c)
	limit := o.s.cfg.MaxChanges
	if o.obs.MaxChanges != 0 {
		limit = o.obs.MaxChanges
	}
	if limit == 0 {
		limit = DefaultMaxChanges
	}
	if limit > 0 && len(o.stats.Changes) < limit {
		o.stats.Changes = append(o.stats.Changes, c)
	} else {
		o.stats.ChangesOmitted++
	}
	if fn := o.s.cfg.OnChange; fn != nil {
		fn(c)
	}
	if fn := o.obs.OnChange; fn != nil {
		fn(c)
	}
}
