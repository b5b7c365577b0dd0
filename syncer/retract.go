package syncer

// retract takes back the outcome a path was counted under while a push
// prepared (uploaded or deduplicated) when its commit turns it into a
// conflict, so Stats counts every path once, in its final outcome. The
// bytes sent stay counted in Bytes.Up: they did go up. OnChange has seen
// the earlier change already; Stats.Changes keeps only the final one.
func (o *op) retract(p string, a Action) {
	if a != ActionUpload && a != ActionDedup {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if a == ActionUpload {
		o.stats.Files.Uploaded--
	} else {
		o.stats.Files.Deduplicated--
	}
	for i := len(o.stats.Changes) - 1; i >= 0; i-- {
		if c := o.stats.Changes[i]; c.Path == p && c.Action == a {
			o.stats.Changes = append(o.stats.Changes[:i], o.stats.Changes[i+1:]...)
			return
		}
	}
	if o.stats.ChangesOmitted > 0 {
		o.stats.ChangesOmitted-- // past the bound: it was counted there
	}
}
