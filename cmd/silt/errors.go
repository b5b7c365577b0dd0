package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
	"syscall"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/seal"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/syncer"
)

// usageError is a malformed command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// refusedError is an operation a guard or a conflict policy refused, or
// completed while keeping something back: exit code 3.
type refusedError struct {
	msg  string
	hint string
}

func (e *refusedError) Error() string { return e.msg }

// hinted attaches a hint to an error whose fix is obvious from where it
// happened (an open of a URL, say).
type hinted struct {
	err  error
	hint string
}

func (e *hinted) Error() string { return e.err.Error() }
func (e *hinted) Unwrap() error { return e.err }

func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hinted{err, hint}
}

// errReported carries the exit code of a child command that has already
// printed its own result and error.
type errReported struct{ code int }

func (e errReported) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// classify returns an error's exit code and, when there is an obvious fix,
// a hint. It goes by sentinel and type only, never by message.
func classify(err error) (code int, hint string) {
	var ue *usageError
	var re *refusedError
	var he *hinted
	var fe *index.FormatError
	var ne *noMatchError
	switch {
	case errors.As(err, &ue):
		return exitUsage, "see: silt --help"
	case errors.As(err, &re):
		return exitRefused, re.hint
	case errors.Is(err, syncer.ErrTooManyDeletes):
		return exitRefused, "nothing was changed; if the deletions are intended, raise --max-delete (or -1 for no limit)"
	case errors.Is(err, lock.ErrTimeout):
		return exitRefused, "wait for the holder, or break a dead holder's lock with: silt lock force-release KEY"
	case errors.Is(err, syncer.ErrFenced):
		return exitRefused, "the lock was taken over while this push ran; acquire it again and retry"
	case errors.As(err, &he):
		return exitError, he.hint
	case errors.As(err, &ne):
		return exitError, ne.hint()
	case errors.Is(err, context.Canceled):
		return exitError, "interrupted; running the same command again is safe"
	case errors.Is(err, syncer.ErrNoConditionalWrite), errors.Is(err, backend.ErrNotSupported):
		return exitError, "this store lacks conditional writes (If-None-Match/If-Match); check it with: silt verify URL"
	case errors.Is(err, syncer.ErrBusy):
		return exitError, "another silt process is using this directory; let it finish, or wait for it with --wait DURATION (e.g. --wait 5m)"
	case errors.Is(err, index.ErrEncrypted):
		return exitError, "the bucket is encrypted: set SILT_PASSWORD or pass --password-file FILE"
	case errors.Is(err, seal.ErrAuth), errors.Is(err, seal.ErrNotSealed), errors.Is(err, seal.ErrUnknownGeneration):
		return exitError, "an object of the encrypted bucket does not authenticate (tampered with, truncated, moved, or another repository's); nothing was installed; check the bucket with: silt check --data URL"
	case errors.Is(err, index.ErrNewerFormat):
		return exitError, "the bucket was written by a newer silt; upgrade silt"
	case errors.Is(err, index.ErrMigrateRequired):
		return exitRefused, "nothing was written; move the bucket to the one format online with: silt migrate --dry-run URL, then silt migrate URL"
	case errors.Is(err, index.ErrOlderFormat):
		return exitError, "the bucket holds format 1, which this silt no longer reads; push your caches into an empty bucket or prefix"
	case errors.Is(err, index.ErrManifestMissing):
		return exitError, "the manifest is gone but the bucket holds its history; nothing was changed; bring back the newest snapshot with: silt recover --dry-run URL, then silt recover URL"
	case errors.Is(err, syncer.ErrRollback):
		return exitError, "the remote index went back to an older state (a restored backup?); nothing was changed; check the bucket (silt log, silt recover --dry-run); if this cache saw a mistaken seq, re-anchor it with: silt pull --reanchor"
	case errors.Is(err, index.ErrCorruptObject), errors.Is(err, index.ErrMissingObject):
		return exitError, "a committed object is damaged or missing; nothing was installed; check the snapshot with: silt check --data URL"
	case errors.As(err, &fe), errors.Is(err, index.ErrCorruptIndex):
		return exitError, "the remote index is damaged; inspect it with: silt ls URL"
	case errors.Is(err, index.ErrCommitContention):
		return exitError, "many writers are committing at once; retry"
	case errors.Is(err, syncer.ErrBadPattern):
		return exitUsage, "rules use .gitignore syntax; fix the named rule (a --exclude/--include flag or a line of .siltignore)"
	case errors.Is(err, index.ErrInvalidPath):
		return exitError, "paths are relative to the cache directory, with forward slashes, outside .silt/"
	case errors.Is(err, iofs.ErrPermission):
		return exitError, "check the permissions of the directory"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return exitError, "the disk holding the cache is full (or over quota): free space and run the same command again; what it installed stays, and silt status says what is not pulled yet"
	}
	return exitError, ""
}

// fail prints err as one line on stderr (plus a hint line) and, with
// --json, as the command's one JSON object; it returns the exit code.
func (c *cli) fail(err error) int {
	if err == nil {
		return exitOK
	}
	var er errReported
	if errors.As(err, &er) {
		return er.code // the child command printed its own result
	}
	code, hint := classify(err)
	name := "silt"
	if c.cmd != nil {
		name = "silt " + c.cmd.name
		var ue *usageError
		if errors.As(err, &ue) {
			hint = "see: " + name + " --help"
		}
	}
	if sig := c.signal; sig != nil {
		code, hint = sig.code, "interrupted by "+sig.name+"; running the same command again is safe"
		err = fmt.Errorf("interrupted (%s): %w", sig.name, err)
	}
	if isTerminal(c.stderr) {
		fmt.Fprint(c.stderr, "\r\033[K") // the message starts a clean line, not over a progress bar
	}
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(c.stderr, "%s: %s\n", name, msg)
	if hint != "" {
		fmt.Fprintf(c.stderr, "hint: %s\n", hint)
	}
	if c.json {
		op := ""
		if c.cmd != nil {
			op = c.cmd.name
		}
		extra := map[string]any{"error": msg, "exit": code}
		if c.out == nil {
			extra["op"] = op
		}
		if hint != "" {
			extra["hint"] = hint
		}
		if jerr := c.flushJSON(extra); jerr != nil {
			fmt.Fprintf(c.stderr, "%s: write JSON: %v\n", name, jerr)
		}
	}
	return code
}
