package capture

import (
	"reflect"
	"testing"
)

// TestStatsAdd fails when a count added to Stats is left out of Add: every
// field of a Stats whose counts are all 1, added to itself, must be 2; the
// lengths that Add takes the larger of (maxFields) must be 1, and the larger
// of 1 and 3 must be 3.
func TestStatsAdd(t *testing.T) {
	var s Stats
	setCounts(t, reflect.ValueOf(&s).Elem(), 1)
	s.Add(s)
	for name := range maxFields {
		f := reflect.ValueOf(&s).Elem().FieldByName(name)
		if f.Int() != 1 {
			t.Errorf("Stats.%s = %d after Add, want 1: the larger, not a sum", name, f.Int())
		}
		f.SetInt(2)
	}
	checkCounts(t, reflect.ValueOf(s), "Stats", 2)
	var o Stats
	o.SnapLen = 3
	s.Add(o)
	if s.SnapLen != 3 {
		t.Errorf("SnapLen %d after adding 3 to 2, want 3", s.SnapLen)
	}
}

// maxFields are the Stats fields Add takes the larger of.
var maxFields = map[string]bool{"SnapLen": true}

// setCounts sets every integer field of v (nested structs included) to n.
func setCounts(t *testing.T, v reflect.Value, n int64) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(n)
		case reflect.Struct:
			setCounts(t, f, n)
		default:
			t.Fatalf("%s.%s is a %s, not a count", v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
}

// checkCounts fails for every integer field of v that is not n.
func checkCounts(t *testing.T, v reflect.Value, path string, n int64) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), path+"."+v.Type().Field(i).Name
		if f.Kind() == reflect.Struct {
			checkCounts(t, f, name, n)
			continue
		}
		if f.Int() != n {
			t.Errorf("%s = %d after Add, want %d: Add leaves it out", name, f.Int(), n)
		}
	}
}
