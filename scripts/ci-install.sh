#!/bin/sh
# Installs the Debian packages the end-to-end test hosts need (test/support/hosts.ts; sudo for
# audits with become: sudo; git-http-backend for the real git server; rpm and rpmbuild for rpm test
# hosts; systemd and dbus-daemon for systemd test hosts; PyYAML, the YAML 1.1 reader most CI tools
# use, to check that written YAML reads the same there; busybox-static for an Alpine-like userland;
# ansible, whose ansible-inventory is the oracle the inventory readers are compared with).
# Idempotent and quiet: does nothing when everything is already installed.
set -eu

packages="openssh-server iproute2 procps sudo git rpm systemd dbus-daemon util-linux python3-yaml busybox-static ansible chromium"

missing=""
for p in $packages; do
  # dpkg-query prints "install ok installed" only for a fully installed package.
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086 # word splitting of the package list is intended
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
