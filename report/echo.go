package report

import (
	"fmt"
	"strings"
)

// echoText is the summary's line on capture duplicates: how many requests
// were seen on two connections, and on which.
func echoText(s *Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s seen on two connections: proxy or NAT; counted once", plural(s.EchoedRequests, "request"))
	var named int64
	for i, l := range s.EchoLegs {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		named += l.Requests
		if l.FirstClient == l.SecondClient && l.FirstBroker == l.SecondBroker {
			fmt.Fprintf(&b, "%s -> %s twice: the capture given twice?", l.FirstClient, l.FirstBroker)
		} else {
			fmt.Fprintf(&b, "%s -> %s and %s -> %s", l.FirstClient, l.FirstBroker, l.SecondClient, l.SecondBroker)
		}
		fmt.Fprintf(&b, ", %d", l.Requests)
	}
	if len(s.EchoLegs) > 0 {
		if named < s.EchoedRequests {
			fmt.Fprintf(&b, "; %d more on other connections", s.EchoedRequests-named)
		}
		b.WriteString(")")
	}
	return b.String()
}

type jsonEchoLeg struct {
	FirstClient  string `json:"first_client"`
	FirstBroker  string `json:"first_broker"`
	SecondClient string `json:"second_client"`
	SecondBroker string `json:"second_broker"`
	Requests     int64  `json:"requests"`
}

func toJSONEchoLegs(ls []EchoLeg) []jsonEchoLeg {
	if len(ls) == 0 {
		return nil
	}
	out := make([]jsonEchoLeg, len(ls))
	for i, l := range ls {
		out[i] = jsonEchoLeg{FirstClient: l.FirstClient.String(), FirstBroker: l.FirstBroker.String(),
			SecondClient: l.SecondClient.String(), SecondBroker: l.SecondBroker.String(), Requests: l.Requests}
	}
	return out
}
