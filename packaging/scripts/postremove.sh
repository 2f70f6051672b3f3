#!/bin/sh
# After the deb or rpm is removed: systemd forgets the unit.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
exit 0
