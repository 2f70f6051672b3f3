#!/bin/sh
# Before the deb or rpm is removed (not upgraded): stop and disable the
# service. dpkg passes "remove" (or "upgrade", "deconfigure"); rpm passes the
# number of versions left after the transaction, 0 on an erase.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now kdupcap-live.service >/dev/null 2>&1 || :
	fi
	;;
esac
exit 0
