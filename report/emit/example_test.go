package emit_test

import (
	"fmt"

	"github.com/kdupcap/kdupcap/report/emit"
)

func ExampleParseURL() {
	seeds, topic, err := emit.ParseURL("kafka://10.0.0.5:9092,10.0.0.6:9092/kdupcap-findings")
	fmt.Println(seeds, topic, err)
	_, _, err = emit.ParseURL("kafka://10.0.0.5/kdupcap-findings")
	fmt.Println(err)
	// Output:
	// [10.0.0.5:9092 10.0.0.6:9092] kdupcap-findings <nil>
	// report: emit URL "kafka://10.0.0.5/kdupcap-findings": broker "10.0.0.5": want HOST:PORT (want kafka://HOST:PORT[,HOST:PORT]/TOPIC)
}
