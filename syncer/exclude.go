package syncer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/siltsync/silt/internal/ignore"
)

// IgnoreFile is the file of exclude rules (gitignore syntax) at the top
// of the data paths (Syncer.Root). It is an ordinary file: it syncs, so
// every cache of a bucket shares its rules, unless a rule excludes it.
const IgnoreFile = ".siltignore"

// maxIgnoreFile bounds the IgnoreFile an operation reads.
const maxIgnoreFile = 1 << 20

// ErrBadPattern is matched (errors.Is) by the error of an exclude or
// include rule that does not parse, a *PatternError naming it.
var ErrBadPattern = ignore.ErrBadPattern

// PatternError names a rule that does not parse: its source (the
// IgnoreFile, "Config.Exclude", "PushOptions.Include", ...), its line
// in a file, and why.
type PatternError = ignore.PatternError

// compileRules builds the matcher of one operation: the IgnoreFile's
// bytes (file), then Config's rules, then the operation's. It is nil when
// there is no rule at all, which costs the walk nothing.
func compileRules(file []byte, exclude, include, opExclude, opInclude []string) (*ignore.Matcher, error) {
	m := &ignore.Matcher{}
	steps := []struct {
		add    func(string, ...string) error
		source string
		lines  []string
	}{
		{m.Exclude, "Config.Exclude", exclude},
		{m.Include, "Config.Include", include},
		{m.Exclude, "exclude option", opExclude},
		{m.Include, "include option", opInclude},
	}
	if len(file) > 0 {
		if err := m.ExcludeFile(IgnoreFile, file); err != nil {
			return nil, err
		}
	}
	n := len(file)
	for _, st := range steps {
		for _, l := range st.lines {
			if err := st.add(st.source, l); err != nil {
				return nil, err
			}
		}
		n += len(st.lines)
	}
	if n == 0 {
		return nil, nil
	}
	return m, nil
}

// rules reads the IgnoreFile and builds the matcher of an operation with
// the extra rules it was given.
func (s *Syncer) rules(opExclude, opInclude []string) (*ignore.Matcher, error) {
	data, err := s.local.readIgnoreFile()
	if err != nil {
		return nil, err
	}
	return compileRules(data, s.cfg.Exclude, s.cfg.Include, opExclude, opInclude)
}

// readIgnoreFile returns the IgnoreFile's bytes (none when absent).
func (l *local) readIgnoreFile() ([]byte, error) {
	f, err := l.dir.Open(l.name(IgnoreFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	}
	if len(data) > maxIgnoreFile {
		return nil, &PatternError{Source: IgnoreFile, Pattern: "", Reason: fmt.Sprintf("file larger than %d bytes", maxIgnoreFile)}
	}
	return data, nil
}

// lastWalk is what metaLastWalk holds.
type lastWalk struct {
	Excluded int    `json:"excluded"`
	Skipped  int    `json:"skipped"`
	List     []Skip `json:"list,omitempty"`
}

// recordWalk keeps what a walk of the whole cache excluded and skipped,
// when it differs from what is kept: most pushes write nothing more.
func (s *Syncer) recordWalk(o *op) {
	o.mu.Lock()
	w := lastWalk{Excluded: o.stats.Files.Excluded, Skipped: o.stats.Files.Skipped, List: o.stats.Skipped}
	o.mu.Unlock()
	data, err := json.Marshal(w)
	if err != nil {
		return
	}
	var same bool
	_ = s.st.view(func(t stx) error {
		same = bytes.Equal(t.lastWalkData(), data)
		return nil
	})
	if !same {
		// Best effort: a failure here only leaves Status one walk behind.
		_ = s.st.update(func(t stx) error { return t.setLastWalkData(data) })
	}
}

// lastWalk is recordWalk's record (zero when there is none).
func (t stx) lastWalk() lastWalk {
	var w lastWalk
	if v := t.lastWalkData(); v != nil {
		_ = json.Unmarshal(v, &w)
	}
	return w
}
