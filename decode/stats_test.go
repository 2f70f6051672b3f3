package decode

import (
	"reflect"
	"testing"
)

// TestStatsAdd fails when a count added to Stats is left out of Add: every
// field of a Stats whose counts are all 1, added to itself, must be 2.
func TestStatsAdd(t *testing.T) {
	var s Stats
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		if v.Field(i).Kind() != reflect.Int64 {
			t.Fatalf("Stats.%s is a %s, not a count", v.Type().Field(i).Name, v.Field(i).Kind())
		}
		v.Field(i).SetInt(1)
	}
	s.Add(s)
	for i := range v.NumField() {
		if got := v.Field(i).Int(); got != 2 {
			t.Errorf("Stats.%s = %d after Add, want 2: Add leaves it out", v.Type().Field(i).Name, got)
		}
	}
}
