#!/bin/sh
# After the deb or rpm is installed or upgraded: systemd learns of the unit.
# The service is neither enabled nor started: it sniffs the network, so an
# administrator turns it on (systemctl enable --now kdupcap-live) after
# setting the interface in /etc/default/kdupcap. An upgrade restarts it if
# it was running.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	systemctl try-restart kdupcap-live.service >/dev/null 2>&1 || :
fi
exit 0
