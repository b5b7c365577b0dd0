package syncer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// packsInFlight bounds the packs a push holds in memory at once: each is
// built in a buffer of at most Config.PackSize bytes before it is named by
// its hash and uploaded.
const packsInFlight = 2

// planPacks splits the distinct contents of a push (order, each with its
// uploads) into packs of small files and the contents stored alone. Packs
// follow path order, so a pull of a directory reads contiguous ranges. A
// pack of one member would cost what a plain object costs and is stored as
// one instead: a one-file push stays at its five requests.
func (s *Syncer) planPacks(order []string, bySHA map[string][]upload) (packs [][]string, alone []string) {
	small := func(sha string) bool {
		size := bySHA[sha][0].local.size
		return s.cfg.PackThreshold > 0 && size > 0 && size < min(s.cfg.PackThreshold, index.MaxFramed)
	}
	var cands []string
	for _, sha := range order {
		if small(sha) {
			cands = append(cands, sha)
		} else {
			alone = append(alone, sha)
		}
	}
	slices.SortFunc(cands, func(a, b string) int { return strings.Compare(bySHA[a][0].path, bySHA[b][0].path) })
	var cur []string
	var size int64
	flush := func() {
		if len(cur) == 1 {
			alone = append(alone, cur[0])
		} else if len(cur) > 1 {
			packs = append(packs, cur)
		}
		cur, size = nil, 0
	}
	for _, sha := range cands {
		n := bySHA[sha][0].local.size
		if len(cur) > 0 && size+n > s.cfg.PackSize {
			flush()
		}
		cur = append(cur, sha)
		size += n
	}
	flush()
	return packs, alone
}

// packMember is one content placed in a pack, with the upload whose file
// supplied its bytes.
type packMember struct {
	sha     string
	from    upload
	at      index.PackPlace
	changed []upload // paths of the content whose bytes moved: they stay dirty
}

// buildPack reads the members' files, each through the verifying reader,
// into a pack of frames (index.PackBuilder; FORMAT.md, "Packs"): a ranged
// read of one file reads its frame only. A file whose bytes no longer
// hash to what planning computed is left out (its paths stay dirty), so
// a pack never holds bytes an entry does not name. It returns the pack
// bytes, the members placed and the contents left out.
func (s *Syncer) buildPack(shas []string, bySHA map[string][]upload) ([]byte, []packMember, []string, error) {
	var largest, total int64
	for _, sha := range shas {
		largest = max(largest, bySHA[sha][0].local.size)
		total += bySHA[sha][0].local.size
	}
	pb := index.NewPackBuilder(largest, total, len(shas))
	var placed []packMember
	var dropped []string
	for _, sha := range shas {
		ok := false
		var changed []upload
		for _, u := range bySHA[sha] {
			err := s.readVerified(pb.Next(u.local.size), u)
			if errors.Is(err, errChangedWhileRead) {
				pb.Drop()
				changed = append(changed, u)
				continue
			}
			if err != nil {
				return nil, nil, nil, fmt.Errorf("push %s: %w", u.path, err)
			}
			pb.Keep()
			placed = append(placed, packMember{sha: sha, from: u, changed: changed})
			ok = true
			break
		}
		if !ok {
			dropped = append(dropped, sha)
		}
	}
	buf, places := pb.Finish()
	for i := range placed {
		placed[i].at = places[i]
	}
	return buf, placed, dropped, nil
}

// readVerified fills dst (len u.local.size) with u's planned bytes, or
// fails with errChangedWhileRead when they no longer hash to u.sha.
func (s *Syncer) readVerified(dst []byte, u upload) error {
	f, err := s.local.open(u.path)
	if err != nil {
		return errChangedWhileRead // gone or unreadable since it was hashed
	}
	defer f.Close()
	vr := &verifyingReader{f: f, size: u.local.size, want: u.sha, h: sha256.New()}
	_, err = io.ReadFull(vr, dst)
	if vr.failed {
		return errChangedWhileRead
	}
	if err == nil && vr.hashed != vr.size {
		err = errChangedWhileRead // cannot happen: ReadFull read size bytes
	}
	return err
}

// sendPack builds and stores one pack and returns its members placed and
// whether the pack's bytes were sent (false: the store had them).
func (s *Syncer) sendPack(ctx context.Context, b backend.Backend, shas []string, bySHA map[string][]upload) (pack string, placed []packMember, dropped []string, sent bool, err error) {
	data, placed, dropped, err := s.buildPack(shas, bySHA)
	if err != nil || len(placed) == 0 {
		return "", nil, dropped, false, err
	}
	pack, sent, err = index.PutPack(ctx, b, data)
	return pack, placed, dropped, sent, err
}
