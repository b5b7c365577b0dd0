package check

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/siltsync/silt/backend"
)

// listChecks cover List: prefixes, pages and byte order.
var listChecks = []Check{
	{"List_EmptyBackend_YieldsNothing", checkListEmptyBackend},
	{"List_EmptyPrefix_ReturnsEveryObject", checkListEmptyPrefix},
	{"List_NestedPrefixes_ReturnMatchingKeysOnly", checkListNestedPrefixes},
	{"List_PrefixNotEndingAtSlash_MatchesPartialSegments", checkListPartialPrefixes},
	{"List_PageSizeDividesCount_EveryObjectOnce", pagination(3)},
	{"List_PageSizeDoesNotDivideCount_EveryObjectOnce", pagination(5)},
	{"List_PageSizeEqualsCount_EveryObjectOnce", pagination(12)},
	{"List_PageSizeExceedsCount_EveryObjectOnce", pagination(100)},
	{"List_DefaultPageSize_EveryObjectOnce", pagination(0)},
	{"List_SpecialCharacterKeys_StrictByteOrder", checkListByteOrder},
	{"List_EachObject_ReportsSizeAndVersionFromPut", checkListInfo},
	{"List_CallbackError_StopsListingAndIsReturned", checkListCallbackError},
}

// listAll lists prefix and checks what every listing must hold: no page
// larger than pageSize, every key under prefix, keys in strictly ascending
// byte order (so no duplicates, within a page or across pages), and a
// version on every object. Empty pages are allowed anywhere: some stores
// answer the last continuation token with an empty page.
func listAll(t T, b backend.Backend, prefix string, pageSize int) []backend.ObjectInfo {
	t.Helper()
	var all []backend.ObjectInfo
	err := b.List(t.Context(), prefix, backend.ListOptions{PageSize: pageSize}, func(page []backend.ObjectInfo) error {
		if pageSize > 0 && len(page) > pageSize {
			t.Errorf("List(%q, PageSize %d) delivered a page of %d objects", prefix, pageSize, len(page))
		}
		all = append(all, page...) // copies: the backend may reuse its page slice
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q, PageSize %d): %v", prefix, pageSize, err)
	}
	for i, o := range all {
		if !strings.HasPrefix(o.Key, prefix) {
			t.Errorf("List(%q) returned %q, which is outside the prefix", prefix, o.Key)
		}
		if i > 0 && all[i-1].Key >= o.Key {
			t.Errorf("List(%q, PageSize %d): %q came after %q; keys must be strictly ascending by byte, each once", prefix, pageSize, o.Key, all[i-1].Key)
		}
		if o.Version == "" {
			t.Errorf("List(%q): object %q has an empty Version", prefix, o.Key)
		}
	}
	return all
}

// wantKeys compares a listing's keys with want, which must be sorted.
func wantKeys(t T, what string, got []backend.ObjectInfo, want []string) {
	t.Helper()
	if keys := keysOf(got); !slices.Equal(keys, want) {
		t.Errorf("%s = %s,\nwant %s", what, quoteAll(keys), quoteAll(want))
	}
}

func putAll(t T, b backend.Backend, keys []string) map[string]backend.ObjectInfo {
	t.Helper()
	infos := make(map[string]backend.ObjectInfo, len(keys))
	for _, k := range keys {
		infos[k] = put(t, b, k, body(k, len(k)))
	}
	return infos
}

func checkListEmptyBackend(t T, b backend.Backend) {
	wantKeys(t, `List("") of an empty backend`, listAll(t, b, "", 0), nil)
	wantKeys(t, `List("a/") of an empty backend`, listAll(t, b, "a/", 0), nil)
}

// tree has nested keys but never a key that is also a "directory" of
// another ("b" beside "b/a"), which a directory-backed store cannot hold.
var tree = []string{"a/b/c", "a/b/d/e", "a/bc", "a/c", "ab", "b.txt", "b/a"}

func checkListEmptyPrefix(t T, b backend.Backend) {
	needListAfterWrite(t, b)
	putAll(t, b, tree)
	wantKeys(t, `List("")`, listAll(t, b, "", 0), tree)
}

func checkListNestedPrefixes(t T, b backend.Backend) {
	needListAfterWrite(t, b)
	putAll(t, b, tree)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"a/", []string{"a/b/c", "a/b/d/e", "a/bc", "a/c"}},
		{"a/b/", []string{"a/b/c", "a/b/d/e"}},
		{"a/b/d/", []string{"a/b/d/e"}},
		{"b/", []string{"b/a"}},
		{"c/", nil},
		{"a/b/c/", nil},
	} {
		wantKeys(t, fmt.Sprintf("List(%q)", tc.prefix), listAll(t, b, tc.prefix, 0), tc.want)
	}
}

func checkListPartialPrefixes(t T, b backend.Backend) {
	needListAfterWrite(t, b)
	putAll(t, b, tree)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"a", []string{"a/b/c", "a/b/d/e", "a/bc", "a/c", "ab"}},
		{"a/b", []string{"a/b/c", "a/b/d/e", "a/bc"}},
		{"b", []string{"b.txt", "b/a"}},
		{"b.", []string{"b.txt"}},
		{"a/b/d/e", []string{"a/b/d/e"}}, // a whole key is a prefix of itself
		{"a/b/d/ee", nil},
		{"x", nil},
	} {
		wantKeys(t, fmt.Sprintf("List(%q)", tc.prefix), listAll(t, b, tc.prefix, 0), tc.want)
	}
}

// pagination lists twelve objects under one prefix with the given page size
// (0: the backend's default), beside objects just outside the prefix.
func pagination(pageSize int) func(T, backend.Backend) {
	return func(t T, b backend.Backend) {
		needListAfterWrite(t, b)
		var want []string
		for i := range 12 {
			want = append(want, fmt.Sprintf("p/%02d", i))
		}
		putAll(t, b, want)
		putAll(t, b, []string{"o", "p.txt", "q/00"}) // just before and after "p/"
		got := listAll(t, b, "p/", pageSize)
		wantKeys(t, fmt.Sprintf(`List("p/", PageSize %d)`, pageSize), got, want)
	}
}

// byteOrderKeys sort differently by bytes than by UTF-16 ("～" U+FF5E is
// before "😀" U+1F600 in UTF-8 but after it in UTF-16), by locale, by case,
// or by path segment ("a/b" is after "a+b", "a-b" and "a.b"). No key is
// also a directory of another ("a" with "a/b"), which a filesystem cannot
// hold.
var byteOrderKeys = []string{
	"B", "a b", "a+b", "a-b", "a.b", "a/b", "a0", "aa", "a~",
	"é", "\u00a0nbsp", "～", "😀",
}

func checkListByteOrder(t T, b backend.Backend) {
	needListAfterWrite(t, b)
	keys := append(slices.Clone(byteOrderKeys), specialKeys...)
	putAll(t, b, keys)
	slices.Sort(keys) // Go compares strings byte by byte
	wantKeys(t, `List("", PageSize 4)`, listAll(t, b, "", 4), keys)
	wantKeys(t, `List("")`, listAll(t, b, "", 0), keys)
}

func checkListInfo(t T, b backend.Backend) {
	needListAfterWrite(t, b)
	sizes := map[string]int{"empty": 0, "one": 1, "some": 1000}
	infos := map[string]backend.ObjectInfo{}
	for k, n := range sizes {
		infos[k] = put(t, b, k, body(k, n))
	}
	// Overwrite one, so a listing that reports a first write's version shows.
	infos["one"] = put(t, b, "one", body("one, again", 1))
	for _, o := range listAll(t, b, "", 0) {
		want, ok := infos[o.Key]
		if !ok {
			t.Errorf("List returned %q, which was never written", o.Key)
			continue
		}
		if o.Size != want.Size {
			t.Errorf("List: %q has Size %d, want %d", o.Key, o.Size, want.Size)
		}
		if o.Version != want.Version {
			t.Errorf("List: %q has Version %q, but Put returned %q", o.Key, o.Version, want.Version)
		}
		delete(infos, o.Key)
	}
	for k := range infos {
		t.Errorf("List did not return %q", k)
	}
}

func checkListCallbackError(t T, b backend.Backend) {
	needListAfterWrite(t, b)
	for i := range 6 {
		put(t, b, fmt.Sprintf("k%d", i), body(fmt.Sprint(i), 5))
	}
	stop := errors.New("conformance: stop listing")
	stopped, after := false, 0
	err := b.List(t.Context(), "", backend.ListOptions{PageSize: 2}, func(page []backend.ObjectInfo) error {
		switch {
		case stopped:
			after++
			return nil
		case len(page) == 0:
			return nil // an empty page is allowed; stop on a real one
		}
		stopped = true
		return stop
	})
	if !errors.Is(err, stop) {
		t.Errorf("List: err = %v, want the callback's error", err)
	}
	if after > 0 {
		t.Errorf("List called the callback %d more times after it returned an error", after)
	}
}
