# syntax=docker/dockerfile:1
# kdupcap's container image: the static binary (CGO_ENABLED=0, no libc) on
# an empty base, run as a user that is not root. Build from the repository's
# root (BuildKit, the default builder since Docker 23):
#
#   docker build -t kdupcap --build-arg VERSION=$(git describe --tags --always) .
#
# analyze reads capture files from a mounted directory:
#
#   docker run --rm -v "$PWD:/data:ro" kdupcap analyze /data/dump.pcap
#
# live sniffs the host's interfaces, so it needs the host's network and two
# capabilities, CAP_NET_RAW (the AF_PACKET socket) and CAP_NET_ADMIN (the
# kernel filter and ring, promiscuous mode); nothing else:
#
#   docker run --rm --network host --cap-drop ALL --cap-add NET_RAW --cap-add NET_ADMIN \
#       kdupcap live -i any --port 9092 --format json --metrics :9464
#
# The user (65532) is not root, so the binary carries the two capabilities
# as file capabilities (setcap below): an exec by any user gets them, as far
# as the container's bounding set (--cap-add) allows. no-new-privileges
# (docker run --security-opt no-new-privileges, Kubernetes'
# allowPrivilegeEscalation: false) makes the kernel ignore file
# capabilities: leave it off for live. A builder that drops extended
# attributes on COPY (the legacy builder) loses them; then run live as root
# with --user kdupcap, which drops root once the socket is open:
#
#   docker run ... --user 0 kdupcap live -i any --user kdupcap
#
# --evidence DIR writes under /var/lib/kdupcap, a volume (the root file
# system may be read-only: docker run --read-only).

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
ARG VERSION=dev
RUN apt-get update && apt-get install -y --no-install-recommends libcap2-bin && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/kdupcap ./cmd/kdupcap \
	&& setcap cap_net_raw,cap_net_admin+ep /out/kdupcap \
	&& mkdir -p /out/etc /out/var/lib/kdupcap \
	&& echo 'kdupcap:x:65532:65532:kdupcap:/var/lib/kdupcap:/nonexistent' >/out/etc/passwd \
	&& echo 'kdupcap:x:65532:' >/out/etc/group

FROM scratch
LABEL org.opencontainers.image.title="kdupcap" \
	org.opencontainers.image.description="Kafka producer re-sends that wrote data twice, from packet captures" \
	org.opencontainers.image.source="https://github.com/kdupcap/kdupcap" \
	org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/etc/passwd /out/etc/group /etc/
COPY --from=build --chown=65532:65532 /out/var/lib/kdupcap /var/lib/kdupcap
COPY --from=build /out/kdupcap /usr/bin/kdupcap
USER 65532:65532
WORKDIR /var/lib/kdupcap
VOLUME ["/var/lib/kdupcap"]
# live --metrics :9464 serves Prometheus here.
EXPOSE 9464
ENTRYPOINT ["/usr/bin/kdupcap"]
CMD ["--help"]
