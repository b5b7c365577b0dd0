package check

import (
	"errors"

	"github.com/siltsync/silt/backend"
)

// basicChecks cover the unconditional verbs and versions.
var basicChecks = []Check{
	{"Put_ThenGetAndStat_ReportTheSameVersion", checkPutGetStatSameVersion},
	{"Put_EmptyObject_RoundTrips", checkPutEmpty},
	{"Put_LargeObject_RoundTrips", checkPutLarge},
	{"Put_Overwrite_ReplacesContentAndVersion", checkPutOverwrite},
	{"Get_MissingKey_IsErrNotExist", checkGetMissing},
	{"Stat_MissingKey_IsErrNotExist", checkStatMissing},
	{"Get_IfMatchCurrentVersion_ReturnsObject", checkGetIfMatchCurrent},
	{"Get_IfMatchStaleVersion_IsErrPrecondition", checkGetIfMatchStale},
	{"Get_IfMatchMissingKey_IsErrPrecondition", checkGetIfMatchMissing},
	{"Delete_ExistingKey_RemovesOnlyThatKey", checkDeleteExisting},
	{"Delete_MissingKey_Succeeds", checkDeleteMissing},
	{"Keys_SpecialCharacters_RoundTrip", checkSpecialKeys},
	{"Keys_DifferingOnlyInCase_AreDistinct", checkCaseDistinct},
	{"Keys_DifferingOnlyInUnicodeNormalisation_AreDistinct", checkNormalisationDistinct},
}

// specialKeys are valid keys that trip up URL encoding, signing, shells and
// sorting: spaces, '+' (a space in form encoding), '%', '?', '#', non-ASCII
// in two and four UTF-8 bytes, and dots that are not "." or ".." segments.
var specialKeys = []string{
	"with space",
	"plus+sign",
	"dir with space/file+plus name",
	"percent%20literal",
	"query?and#hash",
	"amp&eq=semi;colon:",
	"quotes'\"`",
	"brackets[]{}()<>",
	"tilde~caret^pipe|star*",
	"unicodé/日本語/ファイル.txt",
	"emoji-😀",
	"fullwidth-～",
	"..leading-dots",
	"trailing-dot.",
	".silt/manifest.json",
	"-dash-first",
}

func checkPutGetStatSameVersion(t T, b backend.Backend) {
	data := body("put-get-stat", 1000)
	info := put(t, b, "dir/obj", data)
	wantObject(t, b, "dir/obj", data, info.Version)
}

func checkPutEmpty(t T, b backend.Backend) {
	info := put(t, b, "empty", []byte{})
	wantObject(t, b, "empty", []byte{}, info.Version)
}

// checkPutLarge writes more than any single read or network buffer holds, so
// a backend that stores only its first buffer is caught.
func checkPutLarge(t T, b backend.Backend) {
	data := body("large", 1<<20+17)
	info := put(t, b, "large", data)
	wantObject(t, b, "large", data, info.Version)
}

func checkPutOverwrite(t T, b backend.Backend) {
	first := put(t, b, "k", body("overwrite-first", 100))
	newer := body("overwrite-second", 50)
	second := put(t, b, "k", newer)
	if second.Version == first.Version {
		t.Errorf("Put over an object with different content returned the old version %q", first.Version)
	}
	wantObject(t, b, "k", newer, second.Version)
}

func checkGetMissing(t T, b backend.Backend) {
	put(t, b, "present", body("present", 10))
	rc, _, err := b.Get(t.Context(), "absent", backend.GetOptions{})
	if rc != nil {
		rc.Close()
		t.Errorf("Get of a missing key returned a reader")
	}
	wantIs(t, `Get("absent")`, err, backend.ErrNotExist)
	if errors.Is(err, backend.ErrPrecondition) || backend.IsRetryable(err) {
		t.Errorf("Get of a missing key: err = %v is also a precondition failure or retryable; it must be only ErrNotExist", err)
	}
}

func checkStatMissing(t T, b backend.Backend) {
	put(t, b, "present", body("present", 10))
	_, err := b.Stat(t.Context(), "absent")
	wantIs(t, `Stat("absent")`, err, backend.ErrNotExist)
	if backend.IsRetryable(err) {
		t.Errorf("Stat of a missing key: err = %v is retryable", err)
	}
	// A key that is a strict prefix of a stored key is still missing.
	_, err = b.Stat(t.Context(), "pres")
	wantIs(t, `Stat("pres") beside "present"`, err, backend.ErrNotExist)
}

func checkGetIfMatchCurrent(t T, b backend.Backend) {
	data := body("ifmatch-current", 300)
	info := put(t, b, "k", data)
	got, gi, err := get(t.Context(), b, "k", backend.GetOptions{IfMatch: info.Version})
	if err != nil {
		t.Fatalf("Get(IfMatch: current version %q): %v", info.Version, err)
	}
	if string(got) != string(data) {
		t.Errorf("Get(IfMatch: current) = %s, want %s", describe(got), describe(data))
	}
	checkInfo(t, "Get", "k", gi, int64(len(data)))
	if gi.Version != info.Version {
		t.Errorf("Get(IfMatch: %q) reported version %q", info.Version, gi.Version)
	}
}

func checkGetIfMatchStale(t T, b backend.Backend) {
	old := put(t, b, "k", body("stale-old", 100))
	put(t, b, "k", body("stale-new", 100))
	data, _, err := get(t.Context(), b, "k", backend.GetOptions{IfMatch: old.Version})
	if err == nil {
		t.Fatalf("Get(IfMatch: stale version) returned %s, want ErrPrecondition", describe(data))
	}
	wantIs(t, "Get(IfMatch: stale version)", err, backend.ErrPrecondition)
}

func checkGetIfMatchMissing(t T, b backend.Backend) {
	gone := put(t, b, "k", body("gone", 10))
	if err := b.Delete(t.Context(), "k", backend.Cond{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, _, err := get(t.Context(), b, "k", backend.GetOptions{IfMatch: gone.Version})
	wantIs(t, "Get(IfMatch) of a deleted key", err, backend.ErrPrecondition)
}

func checkDeleteExisting(t T, b backend.Backend) {
	put(t, b, "a/b", body("a/b", 10))
	sibling := body("a/bc", 10)
	sv := put(t, b, "a/bc", sibling)
	if err := b.Delete(t.Context(), "a/b", backend.Cond{}); err != nil {
		t.Fatalf("Delete(existing): %v", err)
	}
	wantAbsent(t, b, "a/b")
	wantObject(t, b, "a/bc", sibling, sv.Version)
}

func checkDeleteMissing(t T, b backend.Backend) {
	if err := b.Delete(t.Context(), "never-written", backend.Cond{}); err != nil {
		t.Errorf("Delete of a missing key without a condition: %v, want success", err)
	}
	put(t, b, "once", body("once", 3))
	for i := range 2 {
		if err := b.Delete(t.Context(), "once", backend.Cond{}); err != nil {
			t.Errorf("Delete number %d of a key: %v, want success", i+1, err)
		}
	}
	wantAbsent(t, b, "once")
}

func checkSpecialKeys(t T, b backend.Backend) {
	versions := map[string]backend.Version{}
	for _, k := range specialKeys {
		versions[k] = put(t, b, k, body(k, 40)).Version
	}
	for _, k := range specialKeys {
		wantObject(t, b, k, body(k, 40), versions[k])
	}
	for _, k := range specialKeys {
		if err := b.Delete(t.Context(), k, backend.Cond{}); err != nil {
			t.Errorf("Delete(%q): %v", k, err)
		}
		wantAbsent(t, b, k)
	}
}

// checkCaseDistinct catches a store on a case-insensitive file system (the
// default on macOS and Windows), where two keys would share one object.
func checkCaseDistinct(t T, b backend.Backend) {
	checkDistinct(t, b, "Readme.md", "README.md")
}

// checkNormalisationDistinct catches a store that normalises Unicode (APFS,
// some gateways): "é" as one code point and as e plus a combining accent are
// different byte strings, so different keys.
func checkNormalisationDistinct(t T, b backend.Backend) {
	checkDistinct(t, b, "caf\u00e9", "cafe\u0301")
}

func checkDistinct(t T, b backend.Backend, k1, k2 string) {
	v1 := put(t, b, k1, body(k1, 20)).Version
	v2 := put(t, b, k2, body(k2, 20)).Version
	wantObject(t, b, k1, body(k1, 20), v1)
	wantObject(t, b, k2, body(k2, 20), v2)
	if err := b.Delete(t.Context(), k1, backend.Cond{}); err != nil {
		t.Fatalf("Delete(%q): %v", k1, err)
	}
	wantAbsent(t, b, k1)
	wantObject(t, b, k2, body(k2, 20), v2)
}
