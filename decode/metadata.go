package decode

import "time"

// Metadata (API key 3): decode reads only the responses, v10 and later,
// whose topics carry both TopicID and name, to name the topics of Produce
// v13 requests, which carry only the ID. The map is shared by every
// connection of the Decoder, since a client may ask one broker for metadata
// and produce to another.

// metadataResponse learns topic names by ID from the body of a
// MetadataResponse answering p.
func (c *Conn) metadataResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	if p.version < 10 {
		return
	}
	d := c.d
	defer d.release()
	resp := &d.mresp
	resp.Version = p.version
	if err := resp.UnsafeReadFrom(body); err != nil {
		d.errorf(c, dir.fromA, pos, "metadata v%d response correlation %d: %v", p.version, p.corr, err)
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic == nil || *t.Topic == "" || t.TopicID == ([16]byte{}) {
			continue
		}
		d.learnTopic(t.TopicID, *t.Topic)
		d.namedBy(t.TopicID, c.info, ts)
	}
}

// learnTopic records name as the topic with ID id; name may alias frame
// bytes.
func (d *Decoder) learnTopic(id [16]byte, name string) {
	if d.opts.OnTopicID != nil {
		d.opts.OnTopicID(id, d.intern(name))
		return
	}
	d.LearnTopic(id, name)
}

// LearnTopic records name as the topic with ID id, as a Metadata response
// naming it does; name may alias bytes the caller reuses. A sharded run
// hands its Decoders' Options.OnTopicID to one Decoder's LearnTopic, in
// the order of the capture.
func (d *Decoder) LearnTopic(id [16]byte, name string) {
	old, ok := d.topicIDs[id]
	switch {
	case ok && old == name:
	case !ok && len(d.topicIDs) >= maxTopicIDs:
		// Bounded: an ID first seen past the bound stays unnamed.
	default:
		d.topicIDs[id] = d.intern(name)
	}
}

// ResolveTopics names the batches of x given by topic ID only, from the
// topics learned so far. Exchanges handed to the Sink have been through it.
func (d *Decoder) ResolveTopics(x *Exchange) {
	for i := range x.Batches {
		b := &x.Batches[i]
		if b.Topic == "" && b.TopicID != ([16]byte{}) {
			b.Topic = d.topicIDs[b.TopicID]
		}
	}
}

// ResolveFetch names the topics of f's partitions, and of their batches,
// that Metadata responses named by ID, as ResolveTopics does for produce
// exchanges.
func (d *Decoder) ResolveFetch(f *Fetch) {
	for i := range f.Partitions {
		fp := &f.Partitions[i]
		if fp.Topic == "" && fp.TopicID != ([16]byte{}) {
			fp.Topic = d.topicIDs[fp.TopicID]
		}
		for j := range fp.Batches {
			fp.Batches[j].Topic = fp.Topic
		}
	}
}
