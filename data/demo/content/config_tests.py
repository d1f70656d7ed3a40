"""Verifier for webapp-service-config: INI file, systemd unit, log directory and config check."""

import configparser
import os
import pwd
import stat

import pytest

INI = "/etc/webapp/webapp.ini"
UNIT = "/etc/systemd/system/webapp.service"
LOG_DIR = "/var/log/webapp"
CHECK_OUT = "/root/output/config_check.txt"


@pytest.mark.parametrize(
    "section,key,expected",
    [
        ("server", "port", "8443"),
        ("server", "workers", "4"),
        ("logging", "level", "WARNING"),
        ("logging", "file", "/var/log/webapp/app.log"),
    ],
    ids=["port", "workers", "level", "logfile"],
)
def test_ini_value(section, key, expected):
    config = configparser.ConfigParser()
    with open(INI, encoding="utf-8") as f:
        config.read_file(f)
    assert config.get(section, key) == expected


def test_database_section_kept():
    config = configparser.ConfigParser()
    with open(INI, encoding="utf-8") as f:
        config.read_file(f)
    assert config.get("database", "url") == "postgresql://webapp@localhost:5432/webapp"


def test_ini_permissions():
    mode = stat.S_IMODE(os.stat(INI).st_mode)
    assert mode == 0o640, f"expected 640, got {oct(mode)[2:]}"


class TestSystemdUnit:
    def test_user(self):
        with open(UNIT, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
        assert "User=webapp" in lines

    def test_exec_start(self):
        with open(UNIT, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
        assert "ExecStart=/opt/webapp/bin/webapp --config /etc/webapp/webapp.ini" in lines

    def test_restart_policy(self):
        with open(UNIT, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
        assert "Restart=on-failure" in lines


class TestLogDirAndCheck:
    def test_log_dir_owner(self):
        info = os.stat(LOG_DIR)
        assert pwd.getpwuid(info.st_uid).pw_name == "webapp"

    def test_config_check_output(self):
        with open(CHECK_OUT, encoding="utf-8") as f:
            text = f.read()
        assert "/etc/webapp/webapp.ini OK" in text
