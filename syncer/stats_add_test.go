package syncer_test

import (
	"reflect"
	"testing"

	"github.com/siltsync/silt/syncer"
)

// setCounts sets every numeric field of the count structs of st to n.
func setCounts(t *testing.T, v reflect.Value, n int64) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(n)
		case reflect.Uint, reflect.Uint64, reflect.Uint32:
			f.SetUint(uint64(n))
		case reflect.Float64:
			f.SetFloat(float64(n))
		case reflect.Struct:
			setCounts(t, f, n)
		}
	}
}

// Every count of Stats, including any added later, is summed by Add.
func TestStats_Add_SumsEveryCount(t *testing.T) {
	var a, b syncer.Stats
	setCounts(t, reflect.ValueOf(&a).Elem(), 1)
	setCounts(t, reflect.ValueOf(&b).Elem(), 2)
	a.Seq, b.Seq = 4, 9
	got := a.Add(b)
	v := reflect.ValueOf(got)
	for _, name := range []string{"Files", "Bytes", "Requests", "Local", "Counts"} {
		s := v.FieldByName(name)
		for i := range s.NumField() {
			f := s.Field(i)
			var n float64
			switch f.Kind() {
			case reflect.Int, reflect.Int64, reflect.Int32:
				n = float64(f.Int())
			case reflect.Uint, reflect.Uint64, reflect.Uint32:
				n = float64(f.Uint())
			case reflect.Float64:
				n = f.Float()
			default:
				continue
			}
			if n != 3 {
				t.Errorf("%s.%s = %v after adding 1 and 2", name, s.Type().Field(i).Name, n)
			}
		}
	}
	if got.Seq != 9 || got.Ms != 3 || got.ChangesOmitted != 3 {
		t.Errorf("Seq %d, Ms %v, ChangesOmitted %d", got.Seq, got.Ms, got.ChangesOmitted)
	}
}
