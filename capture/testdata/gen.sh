#!/bin/sh
# Regenerates the real captures of this directory (needs root, tcpdump,
# editcap and mergecap). See README.md.
set -eu
cd "$(dirname "$0")"
PORT=29092
cap() { # cap IFACE OUT [tcpdump options]
	iface=$1 out=$2
	shift 2
	tcpdump -Z root -i "$iface" -s 0 -U --immediate-mode "$@" -w "$out" "tcp port $PORT" 2>/dev/null &
	pid=$!
	sleep 1
	/usr/bin/python3 talk.py $PORT
	sleep 1
	kill -INT $pid
	wait $pid || true
}
cap lo lo-ethernet.pcap
cap any any-sll2.pcap --time-stamp-precision=nano
cap any any-sll.pcap -y LINUX_SLL
editcap -F pcapng lo-ethernet.pcap lo.pcapng.tmp
mergecap -F pcapng -w mixed-links.pcapng lo.pcapng.tmp any-sll2.pcap
rm lo.pcapng.tmp
gzip -9 -n -c any-sll.pcap > any-sll.pcap.gz
rm any-sll.pcap
