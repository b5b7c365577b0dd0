package backend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
)

func TestKindConstructors_EachKind_IsItsSentinelAndPermanent(t *testing.T) {
	cause := errors.New("the store said so")
	for _, tc := range []struct {
		name     string
		make     func(op, key string, cause error) error
		sentinel error
	}{
		{"NotFound", backend.NotFound, backend.ErrNotExist},
		{"PreconditionFailed", backend.PreconditionFailed, backend.ErrPrecondition},
		{"NotModified", backend.NotModified, backend.ErrNotModified},
		{"InvalidRange", backend.InvalidRange, backend.ErrInvalidRange},
	} {
		for _, c := range []error{nil, cause} {
			err := tc.make("get", "k", c)
			var be *backend.Error
			if !errors.As(err, &be) || be.Op != "get" || be.Key != "k" || be.Retryable {
				t.Errorf("%s(%v) = %#v, want a permanent *Error of get k", tc.name, c, err)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("%s(%v) = %v, want errors.Is %v", tc.name, c, err, tc.sentinel)
			}
			if c != nil && (!errors.Is(err, c) || !strings.Contains(err.Error(), tc.sentinel.Error()+": "+c.Error())) {
				t.Errorf("%s(cause) = %q, want the sentinel then the cause", tc.name, err)
			}
		}
	}
}

func TestCheckBodySize_Mismatch_IsPermanentPutError(t *testing.T) {
	if err := backend.CheckBodySize("k", 3, 3); err != nil {
		t.Fatalf("CheckBodySize(3, 3) = %v, want nil", err)
	}
	for _, n := range []int64{2, 4} {
		err := backend.CheckBodySize("k", n, 3)
		var be *backend.Error
		if !errors.As(err, &be) || be.Op != "put" || be.Retryable || !strings.Contains(err.Error(), fmt.Sprintf("body has %d bytes, size says 3", n)) {
			t.Errorf("CheckBodySize(%d, 3) = %v, want a permanent put error naming both sizes", n, err)
		}
	}
}

// TestDriverPut_BodySizeMismatch_StoresNothing holds every local driver
// to the shared check: a body shorter or longer than its size fails with
// the same permanent error and leaves no object.
func TestDriverPut_BodySizeMismatch_StoresNothing(t *testing.T) {
	f, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]backend.Backend{"mem": mem.New(), "fs": f} {
		for _, body := range []string{"ab", "abcd"} {
			_, err := b.Put(context.Background(), "k", bytes.NewReader([]byte(body)), 3, backend.Cond{})
			if err == nil || backend.IsRetryable(err) || !strings.Contains(err.Error(), "size") {
				t.Errorf("%s: Put(%q, size 3) = %v, want a permanent size error", name, body, err)
			}
			if ok, err := backend.Exists(context.Background(), b, "k"); ok || err != nil {
				t.Errorf("%s: after a failed Put, Exists = %v, %v; want false", name, ok, err)
			}
		}
	}
}

// statAt answers Stat with a fixed result, standing in for a driver.
type statAt struct {
	info backend.ObjectInfo
	err  error
}

func (s statAt) Stat(context.Context, string) (backend.ObjectInfo, error) { return s.info, s.err }

func TestStaleOrInvalid_EachAnswer_Settles(t *testing.T) {
	invalid := backend.InvalidRange("get", "k", nil)
	for _, tc := range []struct {
		name string
		d    statAt
		is   error
	}{
		{"gone", statAt{err: backend.NotFound("stat", "k", nil)}, backend.ErrPrecondition},
		{"moved on", statAt{info: backend.ObjectInfo{Version: "v2"}}, backend.ErrPrecondition},
		{"same version", statAt{info: backend.ObjectInfo{Version: "v1"}}, backend.ErrInvalidRange},
		{"stat failed", statAt{err: backend.Retryable("stat", "k", errors.New("reset"))}, backend.ErrInvalidRange},
	} {
		err := backend.StaleOrInvalid(context.Background(), tc.d, "k", "v1", invalid)
		if !errors.Is(err, tc.is) {
			t.Errorf("%s: StaleOrInvalid = %v, want %v", tc.name, err, tc.is)
		}
	}
}

// TestNew_EveryConstructor_ReturnsThePortableStore: a driver's own New
// hands out the store behind Portable, so a consumer never meets a bare
// driver: an invalid key is refused before the driver sees it, and the
// driver is one Unwrap below.
func TestNew_EveryConstructor_ReturnsThePortableStore(t *testing.T) {
	f, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opened, err := backend.Open(context.Background(), "mem://portable-new")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]backend.Backend{"mem.New": mem.New(), "fs.New": f, "Open": opened} {
		if backend.Portable(b) != b && name != "Open" {
			t.Errorf("%s: Portable(store) wrapped it again, want the store itself (already portable)", name)
		}
		if _, err := b.Stat(context.Background(), "../escape"); !errors.Is(err, backend.ErrInvalidKey) {
			t.Errorf("%s: Stat(../escape) = %v, want ErrInvalidKey from the portable layer", name, err)
		}
		if _, err := b.Stat(context.Background(), "x"); !backend.IsNotExist(err) {
			t.Errorf("%s: Stat(x) = %v, want ErrNotExist", name, err)
		}
	}
	if _, ok := backend.Base(mem.New()).(*mem.Backend); !ok {
		t.Errorf("Base(mem.New()) = %T, want the *mem.Backend driver", backend.Base(mem.New()))
	}
}

func TestList_PageSizeOutOfRange_DriversSeeItFilled(t *testing.T) {
	b := mem.New()
	for i := range 3 {
		backend.PutBytes(context.Background(), b, fmt.Sprintf("p/%d", i), []byte("x"), backend.Cond{})
	}
	for _, size := range []int{0, -1, backend.DefaultPageSize + 1} {
		pages := 0
		err := b.List(context.Background(), "p/", backend.ListOptions{PageSize: size}, func(page []backend.ObjectInfo) error {
			pages++
			if len(page) != 3 {
				t.Errorf("PageSize %d: page of %d, want all 3 in one page", size, len(page))
			}
			return nil
		})
		if err != nil || pages != 1 {
			t.Errorf("PageSize %d: %d pages, %v; want 1 page", size, pages, err)
		}
	}
}

// refusing is a store whose every Stat meets a refused connection.
type refusing struct{ backend.Backend }

func (refusing) Stat(context.Context, string) (backend.ObjectInfo, error) {
	return backend.ObjectInfo{}, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

// through is a wrapper that passes every call on, as backend/wrap's do.
type through struct{ backend.Backend }

// TestPortable_Regression_TwoLayersNameTheEndpointOnce: now that every
// constructor returns a portable store, Production over a wrapper over
// one stacks two Portables; the failure to connect is named once.
func TestPortable_Regression_TwoLayersNameTheEndpointOnce(t *testing.T) {
	b := backend.Portable(through{backend.Portable(refusing{mem.New()})})
	_, err := b.Stat(context.Background(), "k")
	if !errors.Is(err, backend.ErrUnreachable) || strings.Count(err.Error(), "cannot connect") != 1 {
		t.Errorf("Stat = %v, want ErrUnreachable naming the endpoint once", err)
	}
}
