package syncer

import (
	"slices"
	"strings"

	"github.com/siltsync/silt/index"
)

// reasonFileDirClash is the conflict a pull reports for a file that a
// damaged or hostile index also holds as a directory.
const reasonFileDirClash = "the remote index holds this path both as a file and as a directory (it holds %q): the file is not pulled, the directory's files are"

// fileDirClashes finds the files of the shards a pull reads that the index
// also holds as directories ("data/a" beside "data/a/inner"). No commit
// writes such a pair (merge refuses it), so only a damaged or hostile
// index holds one; a cache cannot hold both, so the pull reports the file
// as one conflict and pulls the directory's files, instead of failing on
// whichever download lands second.
func fileDirClashes(m *index.Manifest, need []int, sh *shards, sc scope) map[string]string {
	var paths []string
	for _, i := range need {
		for p := range sh.entries(m.Shards[i].ID) {
			if sc.contains(p) {
				paths = append(paths, p)
			}
		}
	}
	slices.Sort(paths)
	clash := map[string]string{}
	for _, p := range paths {
		dir := p + "/"
		if k, _ := slices.BinarySearch(paths, dir); k < len(paths) && strings.HasPrefix(paths[k], dir) {
			clash[p] = paths[k]
		}
	}
	return clash
}
