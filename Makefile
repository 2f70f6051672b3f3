# kdupcap: the two set-up commands are `make demo` and `make test`.
GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 5s
BENCH_SIZE  ?= 100MB
BENCH_DIR   ?= testdata/bench

# package:target pairs that `make test` runs briefly and `make fuzz` longer.
FUZZ_TARGETS = \
	./capture:FuzzSource \
	./capture:FuzzPacket \
	./decode:FuzzConn \
	./decode:FuzzProduceRequest \
	./decode:FuzzRecords \
	./decode:FuzzFetchResponse \
	./detect:FuzzOrder \
	./detect:FuzzRecordMatch

.PHONY: all build demo test lint unit fuzz-smoke fuzz bench clean

all: build

# CGO_ENABLED=0: no C anywhere (afpacket is pure Go), so the binary is static
# and runs on any Linux host it is copied to.
build:
	CGO_ENABLED=0 $(GO) build -o kdupcap ./cmd/kdupcap

# Runs the main job on the bundled seed captures.
demo: build
	./kdupcap analyze testdata/seed-nonidempotent-retry.pcap testdata/seed-idempotent-retry.pcap

# The whole test suite: format, vet, staticcheck, unit + golden + real-traffic
# tests, and every fuzz target briefly.
test: lint unit fuzz-smoke

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed on: $$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

unit:
	$(GO) test -count=1 ./...

fuzz-smoke:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	done

fuzz:
	$(MAKE) fuzz-smoke FUZZTIME=2m

# Throughput on generated captures (BENCH_SIZE, default 100MB; loopback-sized
# and Ethernet-sized segments) beside the bare pcapgo read loop, per-stage Go
# benchmarks with allocations, and the CLI's wall time and peak RSS. The
# analyze benchmark fails if the findings differ from the generator's manifest.
bench: build
	mkdir -p $(BENCH_DIR)
	$(GO) run ./internal/gencap/cmd/gencap -o $(BENCH_DIR)/bench-lo.pcap -size $(BENCH_SIZE) -mtu 65535
	$(GO) run ./internal/gencap/cmd/gencap -o $(BENCH_DIR)/bench-eth.pcap -size $(BENCH_SIZE) -mtu 1500
	$(GO) test -run='^$$' -bench=. -benchmem ./capture ./decode ./detect
	@for f in bench-lo bench-eth; do \
		echo "== $$f.pcap"; \
		KDUPCAP_BENCH_PCAP=$(abspath $(BENCH_DIR))/$$f.pcap $(GO) test -run='^$$' -bench='Analyze|ReadLoop' \
			-benchmem -benchtime=3x ./cmd/kdupcap | grep -E '^Benchmark' || exit 1; \
		if [ -x /usr/bin/time ]; then \
			/usr/bin/time -f "kdupcap analyze: %e s wall, %M KB peak RSS" ./kdupcap analyze --format json $(BENCH_DIR)/$$f.pcap >/dev/null; \
		fi; \
	done
	@echo "== live path: AF_PACKET ring on lo -> reassembly -> Kafka decode -> detect (root only)"
	@if [ "$$(id -u)" = 0 ]; then \
		$(GO) test -run='^$$' -bench='LiveLoopback' -benchtime=200000x ./capture/live | grep -E '^Benchmark'; \
		$(GO) test -run='^$$' -bench='LivePipeline' -benchtime=300000x ./cmd/kdupcap | grep -E '^Benchmark'; \
	else echo "skipped: not root"; fi

clean:
	rm -rf kdupcap $(BENCH_DIR)
