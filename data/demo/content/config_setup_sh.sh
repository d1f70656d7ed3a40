#!/bin/bash
set -euo pipefail

cp /root/config/webapp.ini.example /etc/webapp/webapp.ini
sed -i -e 's/^port = .*/port = 8443/' -e 's/^workers = .*/workers = 4/' \
       -e 's/^level = .*/level = WARNING/' -e 's|^file = .*|file = /var/log/webapp/app.log|' /etc/webapp/webapp.ini
chown webapp:webapp /var/log/webapp
chmod 640 /etc/webapp/webapp.ini

cat > /etc/systemd/system/webapp.service <<'UNIT'
[Unit]
Description=webapp application server
After=network-online.target

[Service]
User=webapp
ExecStart=/opt/webapp/bin/webapp --config /etc/webapp/webapp.ini
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT

mkdir -p /root/output
/opt/webapp/bin/webapp --check-config /etc/webapp/webapp.ini | tee /root/output/config_check.txt
