# kdupcap: the two set-up commands are `make demo` and `make test`.
GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 5s
# FUZZMINTIME bounds the minimizing of each new interesting input: Go's
# default of 60s would spend a short run minimizing one input (large TLS
# seeds) instead of fuzzing.
FUZZMINTIME ?= 2s
BENCH_SIZE  ?= 100MB
BENCH_DIR   ?= testdata/bench
BENCH_BIG_SIZES ?= 1GB 4GB
BENCH_BIG_WINDOW ?= 30s
# BENCH_TSHARK=0 leaves tshark out of the bench table.
BENCH_TSHARK ?= 1
BENCH_TSHARK_FLAG = $(if $(filter 0,$(BENCH_TSHARK)),-tshark=)

# package:target pairs that `make test` runs briefly and `make fuzz` longer.
FUZZ_TARGETS = \
	./capture:FuzzSource \
	./capture:FuzzPcapRecords \
	./capture:FuzzPcapngInPlace \
	./capture:FuzzZstdStream \
	./capture:FuzzDecodeEthernet \
	./capture:FuzzPacket \
	./capture:FuzzFastPath \
	./decode:FuzzConn \
	./decode:FuzzProduceRequest \
	./decode:FuzzRecords \
	./decode:FuzzFetchResponse \
	./decode:FuzzSASL \
	./decode:FuzzFrameAlloc \
	./decode:FuzzProduceAlloc \
	./decode:FuzzFetchAlloc \
	./decode:FuzzRecordsAlloc \
	./detect:FuzzOrder \
	./detect:FuzzRecordMatch \
	./fleet:FuzzDecode \
	./capture/tlsdecrypt:FuzzRecords \
	./capture/tlsdecrypt:FuzzKeyLog

.PHONY: all build demo test lint unit fuzz-smoke fuzz bench-smoke bench bench-big bench-real bench-tools clean readme-check readme-update man

all: build

# CGO_ENABLED=0: no C anywhere (afpacket is pure Go), so the binary is static
# and runs on any Linux host it is copied to.
build:
	CGO_ENABLED=0 $(GO) build -o kdupcap ./cmd/kdupcap

# The man page, man/kdupcap.1, written by the binary from the flags its
# commands parse (kdupcap man), dated by the commit built; man/ is not
# committed: the release packages build it.
man: build
	mkdir -p man
	./kdupcap man > man/kdupcap.1.tmp && mv man/kdupcap.1.tmp man/kdupcap.1

# Runs the main job on the bundled seed captures.
demo: build
	./kdupcap analyze testdata/seed-nonidempotent-retry.pcap testdata/seed-idempotent-retry.pcap
	@echo "== a TLS 1.3 capture that carries its keys (pcapng Decryption Secrets Block): decrypted with no flag"
	./kdupcap analyze testdata/kgo-tls13-nonidempotent-timeout.pcapng

# Every output pasted into README.md (a code block after a
# `<!-- readme-check: ARGS -->` marker) is what the current binary prints:
# readme-check fails when one differs, readme-update rewrites them (review
# the diff). See internal/readmecheck.
readme-check: build
	$(GO) run ./internal/readmecheck/cmd/readmecheck -kdupcap ./kdupcap README.md

readme-update: build
	$(GO) run ./internal/readmecheck/cmd/readmecheck -update -kdupcap ./kdupcap README.md

# The whole test suite: format, vet, staticcheck, the README's pasted outputs,
# unit + golden + real-traffic
# tests, every fuzz target briefly, and every benchmark once.
test: lint readme-check unit fuzz-smoke bench-smoke

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed on: $$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

unit:
	$(GO) test -count=1 ./...

# A run that fails with nothing but "context deadline exceeded" at the end
# of FUZZTIME, no failing input written, is Go's own fuzz coordinator racing
# its deadline (golang/go#75804, fixed in Go 1.27), not a finding: it is run
# once more, and fails the target only when that fails too.
fuzz-smoke:
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		for try in 1 2; do \
			echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
			if $(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINTIME) $$pkg >$$log 2>&1; then \
				cat $$log; break; fi; \
			cat $$log; \
			if [ $$try = 1 ] && grep -q 'context deadline exceeded' $$log && \
				! grep -qE 'Failing input written|panic:|_test.go:[0-9]+:' $$log; then \
				echo "fuzz $$pkg $$fn: the fuzz coordinator's deadline race (golang/go#75804), no failing input: once more"; \
				continue; fi; \
			exit 1; \
		done; \
	done

fuzz:
	$(MAKE) fuzz-smoke FUZZTIME=2m

# Every benchmark once (-benchtime=1x): not a measure, a check that each
# still runs and that the checks inside it hold (a default halved under
# one made BenchmarkAdvanceIdle forget its batches, and only `make bench`
# said so). About 30-60 s.
bench-smoke:
	$(GO) test -count=1 -run='^$$' -bench=. -benchtime=1x ./...

# Throughput on generated captures (BENCH_SIZE, default 100MB; loopback-sized
# and Ethernet-sized segments): per-stage Go benchmarks with allocations
# (benchstat-comparable), then the bare pcapgo read loop, `kdupcap analyze`
# and tshark (BENCH_TSHARK=0 skips it) side by side, each as its own process,
# in one table with wall time, MB/s, packets/s and peak RSS. The bench fails
# if analyze's findings differ from the generator's manifest or its peak RSS
# exceeds 256 MiB. bench-tls.pcap is the loopback traffic over TLS 1.3
# (AES-128-GCM), its key log beside it (bench-tls.pcap.keys): analyze runs
# with --tls-keylog, tshark with tls.keylog_file, and the table ends with
# decrypted analyze as a share of plaintext analyze on loopback (target
# >= 50%). Beside them, a capture of real client traffic and its re-cut
# and compressed copies (bench-real): analyze also with --workers 1, and
# each compressed copy against its decompressor alone; on these the table
# ends with issue 17's targets, met or not.
bench: build bench-tools
	mkdir -p $(BENCH_DIR)
	$(GO) run ./internal/gencap/cmd/gencap -o $(BENCH_DIR)/bench-lo.pcap -size $(BENCH_SIZE) -mtu 65535
	$(GO) run ./internal/gencap/cmd/gencap -o $(BENCH_DIR)/bench-eth.pcap -size $(BENCH_SIZE) -mtu 1500
	$(GO) run ./internal/gencap/cmd/gencap -tls -o $(BENCH_DIR)/bench-tls.pcap -size $(BENCH_SIZE) -mtu 65535
	@$(MAKE) --no-print-directory bench-real REAL_SIZE=$(BENCH_SIZE) REAL_PREFIX=$(BENCH_DIR)/real
	$(GO) test -run='^$$' -bench=. -benchmem ./capture ./decode ./detect ./profile
	@echo "== fleet: bytes per attempt (as encoded, and zstd as produced), correlate throughput (attempts/s on one core)"
	$(GO) test -run='^$$' -bench=. -benchmem ./fleet
	$(GO) test -run='^$$' -bench='^BenchmarkCorrelate$$' -benchtime=3x -benchmem ./pipeline
	@echo "== correlate peak RSS, each run its own process: the bench's attempts (1m window), then a 10s window over 200k and 1M attempts: bounded by the window"
	$(GO) test -run='^$$' -bench='^BenchmarkCorrelatePeakRSS$$' -benchtime=1x ./pipeline
	bin/benchrun -kdupcap ./kdupcap -readloop bin/readloop $(BENCH_TSHARK_FLAG) \
		$(BENCH_DIR)/bench-lo.pcap $(BENCH_DIR)/bench-eth.pcap $(BENCH_DIR)/bench-tls.pcap $(call real_files,$(BENCH_DIR)/real)
	@echo "== live path: AF_PACKET ring on lo -> reassembly -> Kafka decode -> detect (root only)"
	@if [ "$$(id -u)" = 0 ]; then \
		$(GO) test -run='^$$' -bench='LiveLoopback' -benchtime=200000x ./capture/live | grep -E '^Benchmark'; \
		$(GO) test -run='^$$' -bench='LivePipeline' -benchtime=300000x ./pipeline | grep -E '^Benchmark'; \
	else echo "skipped: not root"; fi

# The issue's targets on big generated captures, in two tables:
#  1. Throughput at the default settings on 1 GB captures with loopback-sized
#     and Ethernet-sized segments (BENCH_BIG_RATIO_SIZE): the read loops,
#     analyze with one worker and at the default, and tshark, 5 interleaved
#     rounds; the analyze/read loop ratios. Likewise on two captures of real
#     client traffic of that size (bench-real), requests of about 700 KB
#     with their 1500-MTU re-cut, pcapng, zstd and gzip copies, and of about 4
#     MB with their re-cut, with issue 17's targets.
#  2. Peak RSS does not grow with the file: analyze with a detection window
#     of BENCH_BIG_WINDOW (30s) on loopback captures of each size in
#     BENCH_BIG_SIZES (1GB and 4GB). The generator writes ~8.5 MB of capture
#     per second of capture time, so both files outlast the window by far and
#     hold the same batches at once: the same peak. (At the default 10m
#     window a 4 GB file is one window and --max-batches bounds it; a 1 GB
#     file reaches neither.)
# About 11 GB of disk; the files are deleted afterwards unless BENCH_KEEP=1.
BENCH_BIG_RATIO_SIZE ?= 1GB
bench-big: build bench-tools
	mkdir -p $(BENCH_DIR)/big
	@for s in $(sort $(BENCH_BIG_SIZES) $(BENCH_BIG_RATIO_SIZE)); do \
		$(GO) run ./internal/gencap/cmd/gencap -o $(BENCH_DIR)/big/bench-lo-$$s.pcap -size $$s -mtu 65535 || exit 1; \
	done
	$(GO) run ./internal/gencap/cmd/gencap -o $(BENCH_DIR)/big/bench-eth-$(BENCH_BIG_RATIO_SIZE).pcap -size $(BENCH_BIG_RATIO_SIZE) -mtu 1500
	@$(MAKE) --no-print-directory bench-real REAL_SIZE=$(BENCH_BIG_RATIO_SIZE) REAL_PREFIX=$(BENCH_DIR)/big/real-$(BENCH_BIG_RATIO_SIZE)
	@$(MAKE) --no-print-directory bench-real REAL_SIZE=$(BENCH_BIG_RATIO_SIZE) REAL_PREFIX=$(BENCH_DIR)/big/real4mb-$(BENCH_BIG_RATIO_SIZE) \
		REAL_BURST=6000 REAL_COMPRESS=0
	@echo "== 1. throughput at the default settings"
	bin/benchrun -runs 5 -kdupcap ./kdupcap -readloop bin/readloop $(BENCH_TSHARK_FLAG) \
		$(BENCH_DIR)/big/bench-lo-$(BENCH_BIG_RATIO_SIZE).pcap $(BENCH_DIR)/big/bench-eth-$(BENCH_BIG_RATIO_SIZE).pcap \
		$(call real_files,$(BENCH_DIR)/big/real-$(BENCH_BIG_RATIO_SIZE)) $(call real_files,$(BENCH_DIR)/big/real4mb-$(BENCH_BIG_RATIO_SIZE)); \
		rc=$$?; [ $$rc = 0 ] || { [ "$(BENCH_KEEP)" = 1 ] || rm -rf $(BENCH_DIR)/big; exit $$rc; }
	@echo "== 2. peak RSS with --window $(BENCH_BIG_WINDOW), whatever the file's size"
	bin/benchrun -runs 3 -tshark= -one-worker=false -analyze-args "--window $(BENCH_BIG_WINDOW)" -kdupcap ./kdupcap -readloop bin/readloop \
		$(foreach s,$(BENCH_BIG_SIZES),$(BENCH_DIR)/big/bench-lo-$(s).pcap); \
		rc=$$?; [ "$(BENCH_KEEP)" = 1 ] || rm -rf $(BENCH_DIR)/big; exit $$rc

# A capture of real client traffic for the benches (issue 17): kgo
# producers writing REAL_SIZE to kfake, captured by tcpdump on lo
# (internal/kafkatest/cmd/realcap, its manifest derived from the broker's
# log), into REAL_PREFIX-lo.pcap; its re-cut to 1500-byte IP packets,
# REAL_PREFIX-eth.pcap; the loopback one as pcapng (what dumpcap and
# Wireshark write), REAL_PREFIX-lo.pcapng, and compressed with zstd and gzip
# (REAL_PREFIX-lo.pcap.zst, .gz; none of these three copies with
# REAL_COMPRESS=0). Each producer
# flushes REAL_BURST records at a time (1000: requests of about 700 KB;
# 6000: about 4 MB), so that the requests do not depend on the machine's
# load. It needs root and tcpdump (skipped without them), and is not
# reproducible byte for byte: each run derives its manifest from its own
# log. real_files lists the files made.
REAL_SIZE   ?= $(BENCH_SIZE)
REAL_PREFIX ?= $(BENCH_DIR)/real
REAL_BURST  ?= 1000
REAL_COMPRESS ?= 1
bench-real:
	@if [ "$$(id -u)" != 0 ] || ! command -v tcpdump >/dev/null; then \
		echo "== real-client capture skipped: it needs root and tcpdump"; exit 0; fi; \
	set -e; mkdir -p $(dir $(REAL_PREFIX)); \
	echo "== real-client capture: kgo producers against kfake, $(REAL_SIZE), tcpdump on lo"; \
	$(GO) run ./internal/kafkatest/cmd/realcap -o $(REAL_PREFIX)-lo.pcap -size $(REAL_SIZE) -burst $(REAL_BURST) -eth $(REAL_PREFIX)-eth.pcap \
		$(if $(filter 0,$(REAL_COMPRESS)),,-ng $(REAL_PREFIX)-lo.pcapng); \
	if [ "$(REAL_COMPRESS)" = 0 ]; then exit 0; fi; \
	if command -v zstd >/dev/null; then zstd -q -f -T0 $(REAL_PREFIX)-lo.pcap -o $(REAL_PREFIX)-lo.pcap.zst; fi; \
	if command -v gzip >/dev/null; then gzip -c $(REAL_PREFIX)-lo.pcap > $(REAL_PREFIX)-lo.pcap.gz; fi
real_files = $$(for f in $(1)-lo.pcap $(1)-eth.pcap $(1)-lo.pcapng $(1)-lo.pcap.zst $(1)-lo.pcap.gz; do [ -f $$f ] && echo $$f; done)

# The read loop and the table maker of the benches.
bench-tools:
	$(GO) build -o bin/readloop ./internal/benchrun/cmd/readloop
	$(GO) build -o bin/benchrun ./internal/benchrun/cmd/benchrun

# The release (.goreleaser.yaml): static binaries for linux, darwin and
# windows (amd64, arm64), their archives, checksums.txt, the deb and rpm,
# into dist/, from the working tree, nothing published. `make test` checks
# it (internal/releasecheck builds a snapshot, lists the archives and
# packages, runs the linux binary). goreleaser v2: .ci/run installs it.
GORELEASER ?= goreleaser
.PHONY: release-files release-snapshot
release-snapshot:
	$(GORELEASER) release --snapshot --clean --skip=publish

# What the archives and packages carry beside the binary, written by the
# binary from the flags it parses: man/kdupcap.1 (make man), and under
# build/ the bash, zsh and fish completions and the gzipped man page.
# goreleaser's before hook runs it.
release-files: build man
	mkdir -p build/completions build/man
	@for sh in bash zsh fish; do \
		echo "./kdupcap completion $$sh > build/completions/kdupcap.$$sh"; \
		./kdupcap completion $$sh > build/completions/kdupcap.$$sh.tmp || exit 1; \
		mv build/completions/kdupcap.$$sh.tmp build/completions/kdupcap.$$sh; \
	done
	gzip -9nc man/kdupcap.1 > build/man/kdupcap.1.gz

clean:
	rm -rf kdupcap bin $(BENCH_DIR) dist build
