package kafkatest

import (
	"context"
	"crypto/tls"
)

// ServerConfig is the broker side's TLS configuration, for a Cluster made
// by hand (NewCluster, then SetTLS) rather than by Run.
func (t *TLS) ServerConfig() *tls.Config { return t.server() }

// ReadBackTLS is ReadBack over TLS, for a Cluster made by hand with
// SetTLS(t.ServerConfig()).
func ReadBackTLS(ctx context.Context, addr, topic string, t *TLS) (*Log, error) {
	return readBack(ctx, addr, topic, nil, t)
}
