package detect

import "time"

// Span is the time from the finding's first attempt to its last answer (or
// its last attempt, or the last connection end it shows, Attempt.End, when
// that came later): the stretch of capture that shows what the finding
// claims. The zero times for a finding without
// attempts.
func (f *Finding) Span() (from, to time.Time) {
	if len(f.Attempts) == 0 {
		return from, to
	}
	from = f.Attempts[0].Time
	for _, a := range f.Attempts {
		if a.Time.After(to) {
			to = a.Time
		}
		if a.Response != nil && a.Response.Time.After(to) {
			to = a.Response.Time
		}
		if a.End != nil && a.End.Time.After(to) {
			to = a.End.Time
		}
	}
	return from, to
}
