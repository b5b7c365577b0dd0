package syncer

import "reflect"

// Add returns the sum of two operations' Stats, as `silt sync` reports a
// pull and a push together: every count (files, bytes, requests, local
// work, time) is added, lists are joined, Seq is the higher one, Op and
// Commit are s's (o's when s has none). The counts are summed field by
// field through reflection, so a count added to Stats later is never left
// out of the totals.
func (s Stats) Add(o Stats) Stats {
	out := s
	addCounts(reflect.ValueOf(&out.Files).Elem(), reflect.ValueOf(o.Files))
	addCounts(reflect.ValueOf(&out.Bytes).Elem(), reflect.ValueOf(o.Bytes))
	addCounts(reflect.ValueOf(&out.Requests).Elem(), reflect.ValueOf(o.Requests))
	addCounts(reflect.ValueOf(&out.Local).Elem(), reflect.ValueOf(o.Local))
	addCounts(reflect.ValueOf(&out.Counts).Elem(), reflect.ValueOf(o.Counts))
	out.Seq = max(s.Seq, o.Seq)
	out.Ms += o.Ms
	out.ChangesOmitted += o.ChangesOmitted
	out.Phases = append(append([]Phase{}, s.Phases...), o.Phases...)
	out.Conflicts = append(append([]Conflict(nil), s.Conflicts...), o.Conflicts...)
	out.Changes = append(append([]Change(nil), s.Changes...), o.Changes...)
	out.Skipped = append(append([]Skip(nil), s.Skipped...), o.Skipped...)
	if out.Op == "" {
		out.Op = o.Op
	}
	if out.Commit == nil {
		out.Commit = o.Commit
	}
	return out
}

// addCounts adds every integer field of src to dst (structs of counts).
func addCounts(dst, src reflect.Value) {
	for i := range dst.NumField() {
		f := dst.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(f.Int() + src.Field(i).Int())
		case reflect.Uint, reflect.Uint64, reflect.Uint32:
			f.SetUint(f.Uint() + src.Field(i).Uint())
		case reflect.Float64:
			f.SetFloat(f.Float() + src.Field(i).Float())
		}
	}
}
