package decode

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions (API key 18) requests, read for the client's software:
//
//	v0-v2   empty body
//	v3+     flexible (request header v2); client_software_name and
//	        client_software_version, compact strings (KIP-511)
//
// The response is not read (it is only kept pending so that responses stay
// matched); its header is v0 even when the request is flexible.

// maxSoftwareBytes bounds the client software name and version kept: KIP-511
// allows letters, digits, '.' and '-'; a real one is a few dozen bytes.
const maxSoftwareBytes = 128

// apiVersionsRequest records the version of an ApiVersions request, and
// reads the client software name and version of a v3+ one, into the
// connection's ConnInfo. It sets them only before the connection's first
// ProduceRequest, since ConnInfo is shared with exchanges already handed to
// the Sink, which decode must not change.
func (c *Conn) apiVersionsRequest(dir *direction, h requestHeader, body []byte, pos int64) {
	if c.info == nil || c.sum.ProduceRequests > 0 {
		return
	}
	if !c.info.ApiVersionsSent || h.version > c.info.ApiVersionsVersion {
		c.info.ApiVersionsSent, c.info.ApiVersionsVersion = true, h.version
	}
	if h.version < 3 {
		return
	}
	req := kmsg.ApiVersionsRequest{Version: h.version}
	if err := req.ReadFrom(body); err != nil {
		c.d.errorf(c, dir.fromA, pos, "api versions v%d request correlation %d: %v", h.version, h.corr, err)
		return
	}
	c.info.ClientSoftwareName = softwareText(req.ClientSoftwareName)
	c.info.ClientSoftwareVersion = softwareText(req.ClientSoftwareVersion)
}

// softwareText is decode's own copy of s, cut to maxSoftwareBytes.
func softwareText(s string) string {
	if len(s) > maxSoftwareBytes {
		s = s[:maxSoftwareBytes]
	}
	return strings.Clone(s)
}
