package kafkatest

import (
	"context"

	"github.com/twmb/franz-go/pkg/kfake"
)

// The exports a test of kdupcap's own Kafka clients (--kafka-* options)
// needs of a cluster it makes by hand (kfake.NewCluster) with TLS and SASL.

// ClusterOpts are the kfake options of a cluster requiring a: SASL on,
// a the superuser.
func (a *SASL) ClusterOpts() []kfake.Opt { return a.clusterOpts() }

// ReadBackAuth is ReadBack over TLS (t, nil: plaintext) authenticating as
// auth (nil: none).
func ReadBackAuth(ctx context.Context, addr, topic string, auth *SASL, t *TLS) (*Log, error) {
	return readBack(ctx, addr, topic, auth, t)
}
