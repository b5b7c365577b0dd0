package wrap_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

func TestCounting_EachVerb_OneRequest(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		op   func(b backend.Backend) error
		want wrap.Counts
	}{
		{"get", func(b backend.Backend) error {
			_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{}, 0)
			return err
		}, wrap.Counts{Get: 1, BytesDown: 5}},
		// A ranged Get is one Get, and only the range comes down.
		{"ranged get", func(b backend.Backend) error {
			_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{Range: &backend.Range{Offset: 1, Length: 3}}, 0)
			return err
		}, wrap.Counts{Get: 1, BytesDown: 3}},
		{"put", func(b backend.Backend) error {
			_, err := backend.PutBytes(ctx, b, "new", []byte("abc"), backend.Cond{})
			return err
		}, wrap.Counts{Put: 1, BytesUp: 3}},
		{"condput", func(b backend.Backend) error {
			_, err := backend.PutBytes(ctx, b, "new", []byte("abcd"), backend.Cond{IfAbsent: true})
			return err
		}, wrap.Counts{CondPut: 1, BytesUp: 4}},
		{"delete", func(b backend.Backend) error { return b.Delete(ctx, "k", backend.Cond{}) }, wrap.Counts{Delete: 1}},
		{"stat", func(b backend.Backend) error { _, err := b.Stat(ctx, "k"); return err }, wrap.Counts{Stat: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mem.New()
			silttest.Put(t, m, "k", "hello")
			c := wrap.Count(m)
			if err := tt.op(c); err != nil {
				t.Fatal(err)
			}
			if got := c.Counts(); got != tt.want {
				t.Errorf("counts = %+v, want %+v", got, tt.want)
			}
			if got := c.Counts().Total(); got != 1 {
				t.Errorf("total = %d, want 1", got)
			}
		})
	}
}

func TestCounting_List_OneRequestPerPage(t *testing.T) {
	tests := []struct {
		n, pageSize int
		prefix      string
		want        int64
	}{
		{7, 3, "d/", 3},
		{6, 3, "d/", 2},
		{7, 7, "d/", 1},
		{7, 0, "d/", 1},     // backend default page size
		{7, 3, "none/", 1},  // a listing with no page is still one request
		{0, 3, "", 1},       // an empty store likewise
		{25, 10, "d/k1", 1}, // prefix narrows to k10..k19
	}
	for _, tt := range tests {
		c := wrap.Count(silttest.Fill(t, tt.n))
		if _, _, err := silttest.ListPages(c, tt.prefix, tt.pageSize); err != nil {
			t.Fatal(err)
		}
		if got := c.Counts(); got != (wrap.Counts{List: tt.want}) {
			t.Errorf("n=%d pageSize=%d prefix=%q: counts = %+v, want List %d", tt.n, tt.pageSize, tt.prefix, got, tt.want)
		}
	}
}

func TestCounting_FailedRequest_Counted(t *testing.T) {
	c := wrap.Count(mem.New())
	if _, err := c.Stat(context.Background(), "missing"); !backend.IsNotExist(err) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
	if _, _, err := c.Get(context.Background(), "missing", backend.GetOptions{}); !backend.IsNotExist(err) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
	if got := c.Counts(); got != (wrap.Counts{Stat: 1, Get: 1}) {
		t.Errorf("counts = %+v, want Stat 1, Get 1", got)
	}
}

// TestCounting_NotModifiedGet_OneGetNoBytes: a conditional read that finds
// the object unchanged is still one GET request, with no body bytes.
func TestCounting_NotModifiedGet_OneGetNoBytes(t *testing.T) {
	m := mem.New()
	info, err := backend.PutBytes(context.Background(), m, "k", []byte("hello"), backend.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	c := wrap.Count(m)
	if _, _, err := c.Get(context.Background(), "k", backend.GetOptions{IfNoneMatch: info.Version}); !errors.Is(err, backend.ErrNotModified) {
		t.Fatalf("err = %v, want ErrNotModified", err)
	}
	if got := c.Counts(); got != (wrap.Counts{Get: 1}) {
		t.Errorf("counts = %+v, want Get 1 and no bytes", got)
	}
}

func TestCounting_InvalidKey_NotCounted(t *testing.T) {
	c := wrap.Count(mem.New())
	if _, err := c.Stat(context.Background(), "../x"); !errors.Is(err, backend.ErrInvalidKey) {
		t.Fatalf("err = %v, want ErrInvalidKey", err)
	}
	if got := c.Counts().Total(); got != 0 {
		t.Errorf("total = %d, want 0", got)
	}
}

func TestCounting_Log_RecordsVerbAndKeyInOrder(t *testing.T) {
	ctx := context.Background()
	c := wrap.Count(mem.New())
	silttest.Put(t, c, "a", "1")
	if _, err := backend.PutBytes(ctx, c, "b", []byte("2"), backend.Cond{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	silttest.Read(t, c, "a")
	if _, _, err := silttest.ListPages(c, "", 1); err != nil {
		t.Fatal(err)
	}
	want := []wrap.Request{
		{Verb: wrap.VerbPut, Key: "a"}, {Verb: wrap.VerbCondPut, Key: "b"}, {Verb: wrap.VerbGet, Key: "a"},
		{Verb: wrap.VerbList, Key: ""}, {Verb: wrap.VerbList, Key: ""},
	}
	if got := c.Log(); !slices.Equal(got, want) {
		t.Errorf("log = %v, want %v", got, want)
	}
}

func TestCounting_Reset_ZeroesCountsAndLog(t *testing.T) {
	c := wrap.Count(mem.New())
	silttest.Put(t, c, "a", "1")
	c.Reset()
	if got := c.Counts(); got != (wrap.Counts{}) {
		t.Errorf("counts after Reset = %+v", got)
	}
	if got := c.Log(); len(got) != 0 {
		t.Errorf("log after Reset = %v", got)
	}
	silttest.Read(t, c, "a")
	if got := c.Counts(); got != (wrap.Counts{Get: 1, BytesDown: 1}) {
		t.Errorf("counts = %+v, want one Get", got)
	}
}

func TestCounts_Sub_CostOfOneOperation(t *testing.T) {
	c := wrap.Count(mem.New())
	silttest.Put(t, c, "a", "12")
	before := c.Counts()
	silttest.Read(t, c, "a")
	silttest.Put(t, c, "b", "345")
	got := c.Counts().Sub(before)
	if want := (wrap.Counts{Get: 1, Put: 1, BytesDown: 2, BytesUp: 3}); got != want {
		t.Errorf("Sub = %+v, want %+v", got, want)
	}
	if got.Total() != 2 {
		t.Errorf("Total = %d, want 2", got.Total())
	}
}
