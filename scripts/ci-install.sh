#!/bin/sh
# Installs the Debian packages the end-to-end test hosts need (test/support/hosts.ts; sudo for
# audits with become: sudo; git-http-backend for the real git server; rpm and rpmbuild for rpm test
# hosts; systemd and dbus-daemon for systemd test hosts; PyYAML, the YAML 1.1 reader most CI tools
# use, to check that written YAML reads the same there; busybox-static for an Alpine-like userland;
# ansible, whose ansible-inventory is the oracle the inventory readers are compared with; qemu and
# kmod for the VM test host with loadable kernel modules, test/support/vm.ts, which boots Debian's
# cloud kernel: that package is downloaded into VM_KERNEL_DIR, never installed; strace, which shows
# what paths a probe section reads, test/unit/probe/own-tree.test.ts; faketime, whose libfaketime
# moves the CLI's clock forward under test/e2e/certificates.test.ts; dnf and createrepo-c, which
# install packages into an rpm test host as an operator would, for test/e2e/adopt-dnf.test.ts).
# Idempotent and quiet: does nothing when everything is already installed.
set -eu

packages="openssh-server iproute2 procps sudo git rpm systemd dbus-daemon util-linux python3-yaml busybox-static ansible chromium qemu-system-x86 kmod strace nftables iptables faketime dnf createrepo-c"
# test/support/vm.ts reads it from here.
vm_kernel_dir=/var/cache/quartermaster-test-vm

missing=""
for p in $packages; do
  # dpkg-query prints "install ok installed" only for a fully installed package.
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

vm_kernel=""
if ! ls "$vm_kernel_dir"/linux-image-*-cloud-amd64_*.deb >/dev/null 2>&1; then
  vm_kernel=yes
fi

if [ -z "$missing" ] && [ -z "$vm_kernel" ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
if [ -n "$missing" ]; then
  # shellcheck disable=SC2086 # word splitting of the package list is intended
  $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ -n "$vm_kernel" ]; then
  # The metapackage names the current kernel package (linux-image-6.1.0-N-cloud-amd64).
  kernel=$(apt-cache depends linux-image-cloud-amd64 | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -n 1)
  # Owned by apt's sandbox user, which downloads into it.
  $sudo mkdir -p "$vm_kernel_dir"
  $sudo chown _apt "$vm_kernel_dir"
  (cd "$vm_kernel_dir" && $sudo apt-get download -qq "$kernel")
fi
