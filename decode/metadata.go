package decode

import "time"

// Metadata (API key 3): decode reads the responses v10 and later, whose
// topics carry both TopicID and name, to name the topics of Produce v13
// requests, which carry only the ID; and the responses v2 and later for
// their ClusterID and brokers (cluster.go). The names are shared by every
// connection of the capture (Shared), since a client may ask one broker for
// metadata and produce to another.

// metadataResponse learns topic names by ID from the body of a
// MetadataResponse answering p.
func (c *Conn) metadataResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	if p.version < 2 {
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
	c.metadataCluster(resp, ts)
	if p.version < 10 {
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic == nil || *t.Topic == "" || t.TopicID == ([16]byte{}) {
			continue
		}
		d.learnTopic(t.TopicID, *t.Topic, c.info, ts)
	}
}

// learnTopic records name as the topic with ID id, named by a response on
// conn at ts; name may alias frame bytes.
func (d *Decoder) learnTopic(id [16]byte, name string, conn *ConnInfo, ts time.Time) {
	d.share(Event{Kind: EventTopic, TopicID: id, Name: d.intern(name), Conn: conn, Time: ts})
}
