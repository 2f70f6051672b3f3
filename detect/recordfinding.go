package detect

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
)

// groupDecided turns the duplicates decided together into findings, one
// per set of attempts that carried them, and reports them: at once through
// OnFinding with emit, else with Flush.
func (d *Detector) groupDecided(emit bool) {
	rs := d.recs
	if len(rs.decided) == 0 {
		return
	}
	var order []string
	groups := make(map[string][]int32)
	var sig []byte
	var ids []int32
	for _, di := range rs.decided {
		ids = ids[:0]
		for _, c := range rs.dups[di].copies {
			ids = append(ids, c.carrier)
		}
		slices.Sort(ids)
		sig = sig[:0]
		for _, id := range ids {
			sig = binary.LittleEndian.AppendUint32(sig, uint32(id))
		}
		k := string(sig)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], di)
	}
	for _, k := range order {
		f := d.recordFinding(groups[k])
		if d.scope == ScopeClient && f.Scope != ScopeClient {
			d.markReported(groups[k], &f)
			continue
		}
		var base Finding
		if d.opts.Streaming {
			// Without Streaming, Flush applies the proof to every
			// finding (applyAll); streamed, each report gets it here.
			d.applyFetched(&f)
			base = f
			d.applyTxn(&f)
		}
		d.countRecordFinding(groups[k], &f)
		if d.opts.Streaming {
			first := groups[k][0]
			d.keepTxnPending(&base, &f, -1, 0, first, d.recs.dups[first].gen)
		}
		switch {
		case d.opts.Streaming && emit:
			d.emit(f)
		case d.opts.Streaming:
			d.fresh = append(d.fresh, f)
		case emit && d.opts.OnFinding != nil:
			d.opts.OnFinding(f)
		}
		if !d.opts.Streaming || d.opts.KeepFindings {
			d.findings = append(d.findings, f)
		}
	}
	for _, di := range rs.decided {
		rs.dups[di].queued = false
		if !rs.dups[di].remembered {
			rs.freeDup(di)
		}
	}
	rs.decided = rs.decided[:0]
}

// countRecordFinding counts f, a first report or a revision of an earlier
// one (when its duplicates were reported before), and marks them reported.
func (d *Detector) countRecordFinding(group []int32, f *Finding) {
	first := &d.recs.dups[group[0]]
	if first.reported == verdictNone {
		d.stats.RecordFindings++
	}
	d.countReport(f, first.reported)
	d.markReported(group, f)
}

// markReported sets the revision of f from its duplicates and counts the
// report in them. When streaming, f is named as the finding that reported one of
// them before, or anew.
func (d *Detector) markReported(group []int32, f *Finding) {
	rs := d.recs
	for _, di := range group {
		dp := &rs.dups[di]
		f.Revision = max(f.Revision, int(dp.revision))
		if f.ID == 0 {
			f.ID = dp.id
		}
	}
	if f.ID == 0 && d.opts.Streaming {
		f.ID = d.newFindingID()
	}
	for _, di := range group {
		dp := &rs.dups[di]
		dp.revision = int32(f.Revision) + 1
		dp.reported = codeOf(f.Verdict)
		dp.id = f.ID
	}
}

// recordFinding builds the Finding of records carried by the same attempts:
// the attempts in send order, the verdict decided on the offsets of the
// group's first record (every record of the group shares its attempts and
// their answers), and each record with its copies.
func (d *Detector) recordFinding(group []int32) Finding {
	rs := d.recs
	// The attempts: every duplicate of the group has the same carriers.
	var cids []int32
	for _, c := range rs.dups[group[0]].copies {
		if !slices.Contains(cids, c.carrier) {
			cids = append(cids, c.carrier)
		}
	}
	slices.SortStableFunc(cids, func(x, y int32) int { return compareAttempts(&rs.carriers.at(x).at, &rs.carriers.at(y).at) })
	pos := func(ci int32) int { return slices.Index(cids, ci) }

	// Records in the order of their copy in the first attempt.
	dups := slices.Clone(group)
	copyIn := func(di int32, ci int32) *recCopy {
		for i := range rs.dups[di].copies {
			if c := &rs.dups[di].copies[i]; c.carrier == ci {
				return c
			}
		}
		return nil
	}
	slices.SortStableFunc(dups, func(x, y int32) int {
		return cmp.Compare(copyIn(x, cids[0]).index, copyIn(y, cids[0]).index)
	})

	atts := make([]attempt, len(cids))
	appended := make([]bool, len(cids))
	rebatched := false
	for i, ci := range cids {
		c := rs.carriers.at(ci)
		atts[i] = c.at
		appended[i] = classify(&c.at) == outAppended
		if cp := copyIn(dups[0], ci); cp != nil && c.at.partResp && c.at.baseOffset >= 0 {
			atts[i].baseOffset = c.at.baseOffset + int64(cp.delta)
		}
		if int(c.numRecords) != len(group) {
			rebatched = true
		}
	}
	c0 := rs.carriers.at(cids[0])
	b := batch{
		topic:         c0.topic,
		topicID:       c0.topicID,
		partition:     c0.partition,
		producerID:    -1,
		producerEpoch: -1,
		firstSequence: -1,
		magic:         c0.magic,
		numRecords:    int32(len(group)),
		records:       true,
		first:         atts[0],
		more:          atts[1:],
	}
	for _, ci := range cids {
		if t := rs.carriers.at(ci).topic; b.topic == "" && t != "" {
			b.topic = t
		}
		if c := rs.carriers.at(ci).at.cluster; b.cluster == 0 {
			b.cluster = c
		}
	}
	change := producerChange(rs, cids)
	f := d.finding(&b)
	f.Match = MatchRecords
	if c0.producerID >= 0 {
		f.ProducerID, f.ProducerEpoch, f.Idempotent = c0.producerID, c0.producerEpoch, true
	}
	f.ProducerChange = change
	f.Kind = KindRecordDuplicate
	for i := 1; i < len(f.Attempts); i++ {
		if f.Attempts[i].Cause != CauseNotARetry {
			f.Kind = KindRecordResend
		}
	}
	f.BatchRelation = RelationRebuilt
	if rebatched {
		f.BatchRelation = RelationRebatched
	}
	if change != "" {
		// verdict judged the attempts as a producer that is not
		// idempotent: across epochs or producer IDs, none deduplicates.
		f.Reason = changeText(rs, cids, change) + "; " +
			strings.Replace(f.Reason, "producer not idempotent", "no deduplication across them", 1)
	}
	if f.Kind == KindRecordDuplicate {
		f.Reason = "every attempt before the last was answered with success before the record was sent again, so no client retry sent it: the application produced it more than once; " + f.Reason
	}
	for i, ci := range cids {
		c := rs.carriers.at(ci)
		f.Attempts[i].Batch = &AttemptBatch{CRC: c.at.crc, NumRecords: c.numRecords,
			ProducerID: c.producerID, ProducerEpoch: c.producerEpoch, BaseSequence: c.firstSequence}
		if r := f.Attempts[i].Response; r != nil {
			// The verdict was decided on the first record's offsets; the
			// answer itself names the batch's base offset.
			r.BaseOffset = c.at.baseOffset
		}
	}

	n := min(len(dups), MaxFindingRecords)
	f.RecordsOmitted = len(dups) - n
	f.Records = make([]Record, n)
	for i, di := range dups[:n] {
		dp := &rs.dups[di]
		r := &f.Records[i]
		r.Offset = -1
		r.Hash = dp.print
		r.TimestampMillis = -1
		r.Copies = make([]RecordCopy, 0, len(dp.copies))
		var offsets []int64
		for _, cp := range dp.copies {
			j := pos(cp.carrier)
			c := rs.carriers.at(cp.carrier)
			off := int64(-1)
			if appended[j] {
				off = c.at.baseOffset + int64(cp.delta)
				if !slices.Contains(offsets, off) {
					offsets = append(offsets, off)
				}
			}
			r.Copies = append(r.Copies, RecordCopy{Attempt: j, OffsetDelta: cp.delta, Offset: off})
			if !r.Known && int(cp.index) < len(c.records) {
				setContent(r, &c.records[cp.index])
			}
		}
		slices.SortStableFunc(r.Copies, func(x, y RecordCopy) int { return cmp.Compare(x.Attempt, y.Attempt) })
		r.OffsetDelta = r.Copies[0].OffsetDelta
		if len(offsets) == 1 {
			r.Offset = offsets[0]
		}
	}
	if f.RecordsOmitted > 0 {
		f.Reason += "; " + strconv.Itoa(f.RecordsOmitted) + " more records carried by the same attempts are not listed"
	}
	return f
}

// producerChange says whether the carriers cids, of one client, sent the
// records under more than one producer ID (ProducerChangeID) or epoch of
// one ID (ProducerChangeEpoch); "" when they are all of one, or not
// idempotent.
func producerChange(rs *recState, cids []int32) ProducerChange {
	c0 := rs.carriers.at(cids[0])
	change := ProducerChange("")
	for _, ci := range cids[1:] {
		c := rs.carriers.at(ci)
		switch {
		case c.producerID != c0.producerID:
			return ProducerChangeID
		case c.producerEpoch != c0.producerEpoch:
			change = ProducerChangeEpoch
		}
	}
	return change
}

// changeText says how the producer changed between the attempts, which
// the broker's deduplication cannot see across.
func changeText(rs *recState, cids []int32, change ProducerChange) string {
	var parts []string
	for _, ci := range cids {
		c := rs.carriers.at(ci)
		p := corr(&c.at) + " under "
		if c.producerID < 0 {
			p += "no producer ID"
		} else {
			p += "producer ID " + strconv.FormatInt(c.producerID, 10) + " epoch " + strconv.Itoa(int(c.producerEpoch))
		}
		parts = append(parts, p)
	}
	what := "a new epoch"
	if change == ProducerChangeID {
		what = "a new producer ID"
	}
	return "the producer is idempotent but sent these records again under " + what + " (attempt " +
		strings.Join(parts, ", attempt ") + "): the broker deduplicates only within one producer ID and epoch"
}
