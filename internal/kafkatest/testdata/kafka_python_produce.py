"""Produce the values read from stdin (one a line) with kafka-python over SSL.

Run by kafkatest.KafkaPythonProduce with /usr/bin/python3 (Debian's
python3-kafka, kafka-python 2.0.2). Its one argument is a JSON object:
addr, topic, partitions, cafile, keylog, request_timeout_ms,
produce_timeout_ms, client_id, max_version ("" or "TLSv1_2"), ciphers
(OpenSSL cipher string for TLS 1.2, "" for the default). Each value is
sent alone (linger 0, one request in flight) and waited for, to partition
i % partitions, acks=all, retries on, no compression.
"""

import json
import logging
import ssl
import sys

from kafka import KafkaProducer

cfg = json.loads(sys.argv[1])
# kafka-python's warnings (a request it gave up on, a retry) go to stderr.
logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")

ctx = ssl.create_default_context(cafile=cfg["cafile"])
# The certificate names 127.0.0.1 (and localhost): the host check holds.
ctx.check_hostname = True
ctx.verify_mode = ssl.CERT_REQUIRED
if cfg.get("max_version") == "TLSv1_2":
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
if cfg.get("ciphers"):
    # OpenSSL's names of the TLS 1.2 suites offered (TLS 1.3's are
    # OpenSSL's defaults: Python has no setting for them).
    ctx.set_ciphers(cfg["ciphers"])
# OpenSSL appends a line per secret as each handshake goes.
ctx.keylog_filename = cfg["keylog"]

producer = KafkaProducer(
    bootstrap_servers=cfg["addr"],
    client_id=cfg["client_id"],
    security_protocol="SSL",
    ssl_context=ctx,
    acks="all",
    retries=5,
    retry_backoff_ms=50,
    linger_ms=0,
    max_in_flight_requests_per_connection=1,
    request_timeout_ms=cfg["request_timeout_ms"],
)

# kafka-python sends its request_timeout_ms as the produce request's
# TimeoutMillis and waits exactly as long itself before it closes the
# connection: a broker that answers REQUEST_TIMED_OUT when that timeout
# expires races the client's own deadline. The sender's copy of the setting
# is what goes into the request: lowered, the broker answers well before
# the client gives up, as a broker whose replication timeout is the shorter.
if cfg.get("produce_timeout_ms"):
    producer._sender.config["request_timeout_ms"] = cfg["produce_timeout_ms"]

parts = max(cfg["partitions"], 1)
values = [l for l in sys.stdin.read().split("\n") if l]
for i, v in enumerate(values):
    md = producer.send(cfg["topic"], value=v.encode(), partition=i % parts).get(timeout=30)
    print("%s %d@%d" % (v, md.partition, md.offset), file=sys.stderr)
producer.flush(timeout=30)
producer.close(timeout=10)
print(ssl.OPENSSL_VERSION, file=sys.stderr)
