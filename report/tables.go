package report

import (
	"bytes"
	"reflect"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twcache"
	"github.com/olekukonko/tablewriter/tw"
)

const (
	left  = tw.AlignLeft
	right = tw.AlignRight
)

// tables hands out tablewriter tables that write to one buffer: one table
// per column alignment, reset for each use. tablewriter (v1.1) gives every
// NewTable a 10240-entry stringer cache that Reset allocates again: made
// per finding, that was ~0.4 ms and ~0.5 MB a finding, a hundred times the
// cost of its JSON line, and a tenth of a whole analyze run over a 1 GB
// capture. Kept tables with a one-entry cache (kdupcap sets no stringer, so
// the cache is never used) cost only their rows.
type tables struct {
	b       *bytes.Buffer
	byAlign map[string]*tablewriter.Table
}

// get returns an empty table writing to ts.b with the columns aligned as
// given and the header printed as written.
func (ts *tables) get(align ...tw.Align) *tablewriter.Table {
	var key strings.Builder
	for _, a := range align {
		key.WriteString(string(a))
		key.WriteByte(0)
	}
	if t, ok := ts.byAlign[key.String()]; ok {
		t.Reset()
		return t
	}
	if ts.byAlign == nil {
		ts.byAlign = make(map[string]*tablewriter.Table)
	}
	t := tablewriter.NewTable(ts.b,
		tablewriter.WithStringerCacheCustom(twcache.NewLRU[reflect.Type, reflect.Value](1)),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: align}))
	ts.byAlign[key.String()] = t
	return t
}
