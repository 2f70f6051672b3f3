package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/kdupcap/kdupcap/decode"
)

// clusterUsage is the help text of --cluster, which analyze and live share.
const clusterUsage = "`NAME=HOST:PORT[,HOST:PORT...]` names the cluster of these broker addresses (IP address and port), where the capture holds no Metadata response with a ClusterID to tell: attempts to two clusters never make one finding (producer IDs are per cluster); repeat per cluster"

// clusterFlag collects the repeated --cluster flags into pipeline.Options.
type clusterFlag []decode.Cluster

func (f *clusterFlag) String() string {
	if f == nil {
		return ""
	}
	var parts []string
	for _, c := range *f {
		addrs := make([]string, len(c.Brokers))
		for i, a := range c.Brokers {
			addrs[i] = a.String()
		}
		parts = append(parts, c.Name+"="+strings.Join(addrs, ","))
	}
	return strings.Join(parts, " ")
}

// Set takes NAME=HOST:PORT[,HOST:PORT...]; an address named in two
// clusters is an error.
func (f *clusterFlag) Set(s string) error {
	name, list, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || list == "" {
		return fmt.Errorf("%q: want NAME=HOST:PORT[,HOST:PORT...], e.g. prod=10.0.0.1:9092,10.0.0.2:9092", s)
	}
	c := decode.Cluster{Name: name}
	for _, a := range strings.Split(list, ",") {
		ap, err := netip.ParseAddrPort(strings.TrimSpace(a))
		if err != nil {
			return fmt.Errorf("%q: %q is not an IP address and port (host names are not resolved)", s, a)
		}
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		for _, other := range *f {
			for _, b := range other.Brokers {
				if b == ap && other.Name != name {
					return fmt.Errorf("%q: %s is named in cluster %q already", s, ap, other.Name)
				}
			}
		}
		c.Brokers = append(c.Brokers, ap)
	}
	*f = append(*f, c)
	return nil
}
