package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
)

// fill sets every exported field of v (a pointer) to a value that is not
// zero, recursively, so a round trip that drops a field shows. A field the
// wire cannot carry (a func, a channel) fails the test: an option that
// only exists in-process cannot reach a served cache.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if v.Type() == reflect.TypeFor[syncer.Resolution]() {
		v.SetInt(int64(syncer.TakeRemote))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fill(t, v.Field(i), path+"."+f.Name)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i), path+"[]")
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+"{key}")
		fill(t, e, path+"{}")
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("v" + strings.ReplaceAll(path, ".", "_"))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(7 + len(path)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(9 + len(path)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	default:
		t.Fatalf("%s: a %v cannot cross the service's wire; carry it as data", path, v.Kind())
	}
}

// throughServer encodes req as the Go client does and decodes it as the
// server's handlers do (unknown fields refused).
func throughServer(t *testing.T, req, into any) {
	t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/v1/x", bytes.NewReader(data))
	if err := decode(r, into); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// Every field of every engine option type reaches the server: a field
// added to syncer's options is carried without anyone writing a mapping,
// and this test fails if it cannot be.
func TestWire_Options_EveryFieldRoundTrips(t *testing.T) {
	t.Run("pull", func(t *testing.T) {
		var want syncer.PullOptions
		fill(t, reflect.ValueOf(&want).Elem(), "PullOptions")
		var got PullRequest
		throughServer(t, PullRequest{PullOptions: want}, &got)
		if !reflect.DeepEqual(got.PullOptions, want) {
			t.Errorf("got %+v, want %+v", got.PullOptions, want)
		}
	})
	t.Run("push", func(t *testing.T) {
		var want syncer.PushOptions
		fill(t, reflect.ValueOf(&want).Elem(), "PushOptions")
		var got PushRequest
		throughServer(t, PushRequest{PushOptions: want}, &got)
		if !reflect.DeepEqual(got.PushOptions, want) {
			t.Errorf("got %+v, want %+v", got.PushOptions, want)
		}
	})
	t.Run("resolve", func(t *testing.T) {
		var want syncer.ResolveOptions
		fill(t, reflect.ValueOf(&want).Elem(), "ResolveOptions")
		var got ResolveRequest
		throughServer(t, ResolveRequest{ResolveOptions: want}, &got)
		if !reflect.DeepEqual(got.ResolveOptions, want) {
			t.Errorf("got %+v, want %+v", got.ResolveOptions, want)
		}
	})
	t.Run("call", func(t *testing.T) {
		var want CallOptions
		fill(t, reflect.ValueOf(&want).Elem(), "CallOptions")
		var got PushRequest
		throughServer(t, PushRequest{CallOptions: want}, &got)
		if got.CallOptions != want {
			t.Errorf("got %+v, want %+v", got.CallOptions, want)
		}
	})
}

// Every field of Stats, the exact request counts and the changes
// included, comes back from the service as the engine made it.
func TestWire_Stats_EveryFieldRoundTrips(t *testing.T) {
	var want syncer.Stats
	fill(t, reflect.ValueOf(&want).Elem(), "Stats")
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, wireStats(want))
	var got Stats
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Engine(), want) {
		t.Errorf("got  %+v\nwant %+v", got.Engine(), want)
	}
	var status syncer.Status
	fill(t, reflect.ValueOf(&status).Elem(), "Status")
	data, _ := json.Marshal(status)
	var back syncer.Status
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, status) {
		t.Errorf("status: got %+v (%v), want %+v", back, err, status)
	}
}

// testToken is a bearer token long enough for CheckToken.
const testToken = "0123456789abcdef0123456789abcdef"

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func newSyncerConfig(t *testing.T) syncer.Config {
	return syncer.Config{Backend: mem.New(), Dir: t.TempDir()}
}
