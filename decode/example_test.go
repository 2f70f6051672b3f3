package decode_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type printer struct{}

func (printer) Produce(x *decode.Exchange) {
	fmt.Printf("conn %d %s->%s corr %d acks %d batches %d: responded %v %q\n",
		x.Conn.ID, x.Conn.Client, x.Conn.Broker, x.CorrelationID, x.Acks, len(x.Batches), x.Responded, x.NoResponse)
}

func Example() {
	d := decode.New(printer{}, decode.Options{Ports: []uint16{9092}})
	client := netip.MustParseAddrPort("10.0.0.1:55000")
	broker := netip.MustParseAddrPort("10.0.0.4:9092")
	ts := time.Unix(0, 0)

	// capture calls NewStream once per TCP connection, then Data, Gap and
	// Close; here the bytes are made with kmsg (a request with no records,
	// so no batches) and the connection closes before the response.
	c := d.NewStream(client, broker, ts)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, -1
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3}}}}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("app")).AppendRequest(nil, req, 42)
	c.Data(true, frame, ts)
	c.Close(ts)

	st := d.Stats()
	fmt.Println("produce requests:", st.ProduceRequests, "connections:", d.Connections()[0].ClientIDs)
	// Output:
	// conn 1 10.0.0.1:55000->10.0.0.4:9092 corr 42 acks -1 batches 0: responded false "connection closed"
	// produce requests: 1 connections: [app]
}
