package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/detect"
)

// A fleet's findings and summaries: the hosts of a finding's attempts
// (detect.Attempt.Host, set by kdupcap correlate), what a correlation saw
// of each host (FleetSummary), and what a capture published of its
// attempts (AttemptsSummary).

// AttemptHosts returns the distinct hosts of f's attempts (Printable), in
// order of first attempt; none for a finding of one capture. A correlation
// (pipeline) counts them for the finding's scope, the table and lines show
// them.
func AttemptHosts(f *detect.Finding) []string {
	var hosts []string
	for i := range f.Attempts {
		if h := f.Attempts[i].Host; h != "" && !slices.Contains(hosts, Printable(h)) {
			hosts = append(hosts, Printable(h))
		}
	}
	return hosts
}

// FleetSummary is what a correlation (kdupcap correlate) saw of the hosts
// whose attempts it read.
type FleetSummary struct {
	// Source names the topic read ("kafka://HOST:PORT/TOPIC"), Group the
	// consumer group.
	Source, Group string
	// Lateness is the bound on how long attempts wait for slower hosts.
	Lateness time.Duration
	// Records counts the attempt records read, Malformed those that did
	// not decode (skipped); Partitions the partitions assigned over the
	// run, Revoked those taken away by a rebalance.
	Records, Malformed   int64
	Partitions, Revoked  int64
	Hosts                []FleetHost
	Errors               []string
	FleetFindings, Local int64 // findings of two or more hosts, of one
}

// FleetHost is one host of a FleetSummary.
type FleetHost struct {
	Host               string
	Attempts, ConnEnds int64
	// Late counts its attempts that came after their time had been
	// passed on (taken as they came), MaxLate by how much at most;
	// MaxLag is how far its capture time was behind the newest host's at
	// most.
	Late            int64
	MaxLate, MaxLag time.Duration
	// Forced counts its records (attempts and connection ends) passed on
	// before their time because the correlation held as many as it may
	// (fleet.MergeOptions.MaxHeld): a slower host's attempts of that time
	// may come after them.
	Forced int64
}

// Latest returns the host that lagged most, and by how much; false when
// there is none.
func (f *FleetSummary) Latest() (FleetHost, bool) {
	if f == nil || len(f.Hosts) == 0 {
		return FleetHost{}, false
	}
	best := f.Hosts[0]
	for _, h := range f.Hosts[1:] {
		if h.MaxLag > best.MaxLag {
			best = h
		}
	}
	return best, true
}

// AttemptsSummary is what a capture published of its attempts
// (--attempts).
type AttemptsSummary struct {
	Target, Host string
	// Records and Bytes: the records published (values' bytes);
	// Delivered those acknowledged; Dropped those refused by a full
	// buffer, Failed those never delivered.
	Records, Bytes, Delivered, Dropped, Failed int64
	Errors                                     []string
}

// fleetLines are the summary lines of s's fleet and attempts, for the
// table.
func fleetLines(s *Summary) []string {
	var out []string
	if a := s.Attempts; a != nil {
		per := 0.0
		if a.Records > 0 {
			per = float64(a.Bytes) / float64(a.Records)
		}
		line := fmt.Sprintf("attempts published to %s as host %s: %s (%.0f bytes each), %d delivered",
			Printable(a.Target), Printable(a.Host), plural(a.Records, "record"), per, a.Delivered)
		if a.Dropped > 0 || a.Failed > 0 {
			line += fmt.Sprintf(", %d dropped (buffer full), %d failed: the correlation misses them", a.Dropped, a.Failed)
		}
		out = append(out, line)
		for _, e := range a.Errors {
			out = append(out, "  attempts error: "+Printable(e))
		}
	}
	if f := s.Fleet; f != nil {
		out = append(out, fmt.Sprintf("fleet: %s read from %s (group %s), %d hosts, %d findings seen only by the fleet, %d by one host",
			plural(f.Records, "attempt record"), Printable(f.Source), Printable(f.Group), len(f.Hosts), f.FleetFindings, f.Local))
		for _, h := range f.Hosts {
			line := fmt.Sprintf("  host %s: %s, %s, up to %s behind the newest host",
				Printable(h.Host), plural(h.Attempts, "attempt"), plural(h.ConnEnds, "connection end"), h.MaxLag.Round(time.Millisecond))
			if h.Late > 0 {
				line += fmt.Sprintf("; %d came later than the %s bound (by up to %s), taken as they came", h.Late, f.Lateness, h.MaxLate.Round(time.Millisecond))
			}
			if h.Forced > 0 {
				line += fmt.Sprintf("; %d records passed on before the bound, the correlation holding all it may: slower hosts' attempts of their time may have come after them", h.Forced)
			}
			out = append(out, line)
		}
		if l, ok := f.Latest(); ok {
			out = append(out, fmt.Sprintf("  latest host: %s, up to %s behind", Printable(l.Host), l.MaxLag.Round(time.Millisecond)))
		}
		if f.Malformed > 0 {
			out = append(out, fmt.Sprintf("  %d records did not decode (skipped)", f.Malformed))
		}
		for _, e := range f.Errors {
			out = append(out, "  fleet error: "+Printable(e))
		}
	}
	return out
}

type jsonFleet struct {
	Source        string          `json:"source"`
	Group         string          `json:"group"`
	LatenessMs    float64         `json:"lateness_ms"`
	Records       int64           `json:"records"`
	Malformed     int64           `json:"malformed,omitempty"`
	Partitions    int64           `json:"partitions_assigned"`
	Revoked       int64           `json:"partitions_revoked,omitempty"`
	FleetFindings int64           `json:"fleet_findings"`
	Local         int64           `json:"single_host_findings"`
	Hosts         []jsonFleetHost `json:"hosts"`
	LatestHost    string          `json:"latest_host,omitempty"`
	LatestLagMs   float64         `json:"latest_host_lag_ms"`
	Errors        []string        `json:"errors,omitempty"`
}

type jsonFleetHost struct {
	Host      string  `json:"host"`
	Attempts  int64   `json:"attempts"`
	ConnEnds  int64   `json:"conn_ends"`
	Late      int64   `json:"late,omitempty"`
	MaxLateMs float64 `json:"max_late_ms,omitempty"`
	MaxLagMs  float64 `json:"max_lag_ms"`
	Forced    int64   `json:"forced,omitempty"`
}

type jsonAttempts struct {
	Target    string   `json:"target"`
	Host      string   `json:"host"`
	Records   int64    `json:"records"`
	Bytes     int64    `json:"bytes"`
	Delivered int64    `json:"delivered"`
	Dropped   int64    `json:"dropped"`
	Failed    int64    `json:"failed"`
	Errors    []string `json:"errors,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func toJSONFleet(f *FleetSummary) *jsonFleet {
	if f == nil {
		return nil
	}
	j := &jsonFleet{Source: f.Source, Group: f.Group, LatenessMs: ms(f.Lateness), Records: f.Records, Malformed: f.Malformed,
		Partitions: f.Partitions, Revoked: f.Revoked, FleetFindings: f.FleetFindings, Local: f.Local,
		Hosts: make([]jsonFleetHost, len(f.Hosts)), Errors: f.Errors}
	for i, h := range f.Hosts {
		j.Hosts[i] = jsonFleetHost{Host: h.Host, Attempts: h.Attempts, ConnEnds: h.ConnEnds, Late: h.Late, MaxLateMs: ms(h.MaxLate), MaxLagMs: ms(h.MaxLag), Forced: h.Forced}
	}
	if l, ok := f.Latest(); ok {
		j.LatestHost, j.LatestLagMs = l.Host, ms(l.MaxLag)
	}
	return j
}

func toJSONAttempts(a *AttemptsSummary) *jsonAttempts {
	if a == nil {
		return nil
	}
	return &jsonAttempts{Target: a.Target, Host: a.Host, Records: a.Records, Bytes: a.Bytes, Delivered: a.Delivered,
		Dropped: a.Dropped, Failed: a.Failed, Errors: a.Errors}
}
