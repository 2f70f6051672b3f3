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
	./decode:FuzzProduceRequest

.PHONY: all build demo test lint unit fuzz-smoke fuzz bench clean

all: build

build:
	$(GO) build -o kdupcap ./cmd/kdupcap

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

# Throughput on a generated capture (BENCH_SIZE, default 100MB) and per-stage
# Go benchmarks with allocations.
bench: build
	mkdir -p $(BENCH_DIR)
	$(GO) run ./internal/gencap/cmd/gencap -o $(BENCH_DIR)/bench.pcap -size $(BENCH_SIZE)
	$(GO) test -run='^$$' -bench=. -benchmem ./capture ./decode ./detect
	KDUPCAP_BENCH_PCAP=$(abspath $(BENCH_DIR)/bench.pcap) $(GO) test -run='^$$' -bench=Analyze -benchmem -benchtime=3x ./cmd/kdupcap

clean:
	rm -rf kdupcap $(BENCH_DIR)
