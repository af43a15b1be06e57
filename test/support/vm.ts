// A real Linux VM as a test host: Debian's cloud kernel under qemu (software emulation, no KVM
// needed), booted from an initramfs built here at run time with busybox as init and shell, kmod,
// this machine's sshd and the kernel modules a test names. Its kernel has loadable modules, which
// this machine's (and so every namespace test host's) has not. A reboot kills qemu and boots the
// same image again: what the test changed at run time is gone, the files built in stay.
// Needs root, qemu-system-x86, kmod, busybox-static and the kernel package that
// scripts/ci-install.sh downloads; see README.md beside this file.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { execa } from "execa";
import { AUDIT_USER } from "./hosts.js";

/** Where scripts/ci-install.sh puts Debian's cloud kernel package (`apt-get download`). */
export const VM_KERNEL_DIR = "/var/cache/quartermaster-test-vm";
// The VM's network card's drivers, loaded by init before anything else, and what they depend on
// (listed, so that one pass over the kernel package extracts them all).
const NETWORK_DRIVERS = ["virtio_pci", "virtio_net"];
const NETWORK_MODULES = [
  ...NETWORK_DRIVERS,
  ...["virtio", "virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev"],
  ...["net_failover", "failover"],
];
const READY_TIMEOUT_MS = 180_000;

export interface VmDefinition {
  /** Host name, also the ssh alias of the audit user; `<name>-root` logs in as root. */
  name: string;
  /** Modules whose .ko files (and dependencies) are in the image, e.g. ["dummy"]. */
  modules: string[];
  /** Files built into the image, e.g. {"/etc/modules-load.d/qm.conf": "nlmon\n"}. */
  files?: Record<string, string>;
}

export interface TestVm {
  name: string;
  /** The kernel release the VM runs (`uname -r`). */
  release: string;
  /** Temp dir holding the image, keys, configs and the console log. */
  dir: string;
  /** ssh_config with a Host block for the audit user and one (`<name>-root`) for root. */
  sshConfig: string;
  /** Seconds from starting qemu to the first ssh session that answered, per boot. */
  bootSeconds: number[];
  /** Run a shell command as root in the VM over ssh; resolves to stdout. */
  exec(command: string): Promise<string>;
  /** Kill qemu and boot the same image again. */
  reboot(): Promise<void>;
  /** Kill qemu and delete the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

async function kernelPackage(): Promise<string> {
  const debs = (await fsp.readdir(VM_KERNEL_DIR).catch(() => [])).filter((f) =>
    /^linux-image-.*-cloud-amd64_.*\.deb$/.test(f),
  );
  if (!debs.length)
    throw new Error(
      `no linux-image-*-cloud-amd64 package in ${VM_KERNEL_DIR}: run scripts/ci-install.sh`,
    );
  return path.join(VM_KERNEL_DIR, debs.sort().at(-1)!);
}

/** Extracts the kernel, its module lists and the named modules' .ko files with their dependencies. */
async function extractKernel(deb: string, modules: string[], into: string): Promise<string> {
  await fsp.mkdir(into);
  const extract = (members: string[]) =>
    execa("sh", [
      "-c",
      'into=$1; shift; dpkg-deb --fsys-tarfile "$0" | tar -x -C "$into" --wildcards "$@"',
      deb,
      into,
      ...members,
    ]);
  const boot = [
    "./boot/vmlinuz-*",
    "./lib/modules/*/modules.builtin*",
    "./lib/modules/*/modules.order",
  ];
  const wanted = new Set<string>();
  // tar fails on a module the package lacks, naming it.
  for (let next = modules; next.length;) {
    next.forEach((m) => wanted.add(m));
    await extract([...boot, ...next.map((m) => `*/${m}.ko`)]);
    const depends = await Promise.all(
      next.map(async (m) => {
        const ko = (await execa("find", [into, "-name", `${m}.ko`])).stdout.split("\n")[0]!;
        return (await execa("modinfo", ["-F", "depends", ko])).stdout.split(",");
      }),
    );
    next = [...new Set(depends.flat())].filter((m) => m && !wanted.has(m));
  }
  const release = (await fsp.readdir(path.join(into, "lib/modules")))[0]!;
  return release;
}

/** The programs' shared libraries, as ldd lists them. */
async function libraries(programs: string[]): Promise<string[]> {
  const out = await Promise.all(programs.map(async (p) => (await execa("ldd", [p])).stdout));
  return [...new Set(out.join("\n").match(/\/\S+/g) ?? [])];
}

// Mounts, the network driver, then what /etc/modules-load.d lists with modprobe.d's blacklist
// applied (as systemd-modules-load does at boot), the network and sshd.
const INIT = `#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /run/sshd && mount -t devpts devpts /dev/pts
${NETWORK_DRIVERS.map((m) => `modprobe ${m}`).join("\n")}
for f in /etc/modules-load.d/*.conf; do
  [ -e "$f" ] || continue
  while read -r m; do case "$m" in ''|'#'*|';'*) ;; *) modprobe -b "$m" ;; esac; done < "$f"
done
ip link set lo up && ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2
# -r: no re-exec of sshd (an emulated exec) per connection.
/usr/sbin/sshd -r -e
echo qm-vm-ready
exec sleep 2147483647
`;

const SSHD_CONFIG = `HostKey /etc/ssh/ssh_host_ed25519_key
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AuthorizedKeysFile /etc/ssh/authorized_keys/%u
StrictModes no
UseDNS no
LogLevel ERROR
# Under emulation the default post-quantum key exchange costs the VM far more than this one.
KexAlgorithms curve25519-sha256
`;

async function writeFiles(root: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [file, contents] of Object.entries(files)) {
    await fsp.mkdir(path.join(root, path.dirname(file)), { recursive: true });
    await fsp.writeFile(path.join(root, file), contents);
  }
}

/** The image's tree: busybox applets, kmod, sshd and their libraries, accounts, keys, files. */
async function buildTree(
  root: string,
  keys: { host: string; user: string },
  files: Record<string, string>,
) {
  const bin = path.join(root, "bin");
  await fsp.mkdir(bin, { recursive: true });
  await fsp.copyFile("/usr/bin/busybox", path.join(bin, "busybox"));
  const kmod = ["modprobe", "rmmod", "insmod", "lsmod", "modinfo"];
  const applets = (await execa("busybox", ["--list"])).stdout.split("\n");
  for (const applet of applets.filter((a) => a !== "busybox" && !kmod.includes(a)))
    await fsp.symlink("busybox", path.join(bin, applet));
  for (const dir of ["sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "run", "tmp", "root"])
    await fsp.mkdir(path.join(root, dir), { recursive: true });
  for (const program of [
    "/usr/sbin/sshd",
    "/usr/bin/kmod",
    ...(await libraries(["/usr/sbin/sshd", "/usr/bin/kmod"])),
  ]) {
    await fsp.mkdir(path.join(root, path.dirname(program)), { recursive: true });
    await fsp.copyFile(program, path.join(root, program));
  }
  for (const tool of kmod) await fsp.symlink("/usr/bin/kmod", path.join(root, "sbin", tool));
  const accounts = [`root:0:0:/root`, `sshd:100:65534:/run/sshd`, `${AUDIT_USER}:1000:1000:/tmp`];
  await writeFiles(root, {
    "/init": INIT,
    "/etc/passwd": accounts
      .map((a) => a.split(":"))
      .map(([u, uid, gid, home]) => `${u}:x:${uid}:${gid}::${home}:/bin/sh\n`)
      .join(""),
    "/etc/group": `root:x:0:\nnogroup:x:65534:\n${AUDIT_USER}:x:1000:\n`,
    // sshd with UsePAM no refuses a locked ("!") account: "*" only disables passwords.
    "/etc/shadow": accounts.map((a) => `${a.split(":")[0]}:*:19000:0:99999:7:::\n`).join(""),
    "/etc/hostname": "qm-vm\n",
    "/etc/ssh/sshd_config": SSHD_CONFIG,
    "/etc/ssh/ssh_host_ed25519_key": await fsp.readFile(keys.host),
    [`/etc/ssh/authorized_keys/${AUDIT_USER}`]: await fsp.readFile(`${keys.user}.pub`),
    "/etc/ssh/authorized_keys/root": await fsp.readFile(`${keys.user}.pub`),
    ...files,
  });
  await fsp.chmod(path.join(root, "init"), 0o755);
  await fsp.chmod(path.join(root, "etc/ssh/ssh_host_ed25519_key"), 0o600);
}

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  server.close();
  return port;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startVm(def: VmDefinition, options: { prefix: string }): Promise<TestVm> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `${options.prefix}-`));
  let qemu: ChildProcess | undefined;
  const stopQemu = async () => {
    if (qemu && qemu.exitCode === null && qemu.signalCode === null) {
      const exited = once(qemu, "exit");
      qemu.kill("SIGKILL");
      await exited;
    }
    qemu = undefined;
  };
  try {
    const keys = { host: path.join(dir, "host_key"), user: path.join(dir, "id_ed25519") };
    for (const key of Object.values(keys))
      await execa("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", def.name, "-f", key]);
    const kernel = path.join(dir, "kernel");
    const release = await extractKernel(
      await kernelPackage(),
      [...NETWORK_MODULES, ...def.modules],
      kernel,
    );
    const root = path.join(dir, "root");
    await buildTree(root, keys, def.files ?? {});
    await fsp.cp(path.join(kernel, "lib/modules"), path.join(root, "lib/modules"), {
      recursive: true,
    });
    await execa("depmod", ["-b", root, release]);
    const initrd = path.join(dir, "initrd.gz");
    await execa("sh", [
      "-c",
      'cd "$0" && find . | busybox cpio -o -H newc | gzip -1 > "$1"',
      root,
      initrd,
    ]);
    await fsp.rm(root, { recursive: true });

    const port = await freePort();
    const knownHosts = path.join(dir, "known_hosts");
    const hostKey = (await fsp.readFile(`${keys.host}.pub`, "utf8"))
      .split(" ")
      .slice(0, 2)
      .join(" ");
    await fsp.writeFile(knownHosts, `[127.0.0.1]:${port} ${hostKey}\n`);
    const sshConfig = path.join(dir, "ssh_config");
    const block = (alias: string, user: string) =>
      [
        `Host ${alias}`,
        "  HostName 127.0.0.1",
        `  Port ${port}`,
        `  User ${user}`,
        `  IdentityFile "${keys.user}"`,
        "  IdentitiesOnly yes",
        `  UserKnownHostsFile "${knownHosts}"`,
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        "",
      ].join("\n");
    await fsp.writeFile(
      sshConfig,
      `${block(def.name, AUDIT_USER)}\n${block(`${def.name}-root`, "root")}`,
    );
    const exec = async (command: string) =>
      (await execa("ssh", ["-F", sshConfig, `${def.name}-root`, command])).stdout;

    const bootSeconds: number[] = [];
    const consoleLog = path.join(dir, "console.log");
    const boot = async () => {
      const started = performance.now();
      const console = fs.openSync(consoleLog, "w");
      const vmlinuz = path.join(kernel, "boot", `vmlinuz-${release}`);
      // pdeathsig: if the test runner dies without stop(), qemu dies with it (setpriv execs it,
      // so qemu keeps the pid). TCG: this kind of machine has a /dev/kvm, but a KVM guest hangs
      // after the BIOS.
      qemu = spawn(
        "setpriv",
        [
          ...["--pdeathsig", "KILL", "qemu-system-x86_64"],
          ...["-accel", "tcg", "-m", "256", "-nographic", "-no-reboot"],
          ...["-kernel", vmlinuz, "-initrd", initrd, "-append", "console=ttyS0 panic=-1 quiet"],
          ...["-netdev", `user,id=net0,hostfwd=tcp:127.0.0.1:${port}-:22`],
          ...["-device", "virtio-net-pci,netdev=net0"],
        ],
        { stdio: ["ignore", console, console] },
      );
      fs.closeSync(console);
      const deadline = Date.now() + READY_TIMEOUT_MS;
      for (;;) {
        if (qemu.exitCode !== null || qemu.signalCode !== null || Date.now() > deadline) {
          const log = await fsp.readFile(consoleLog, "utf8");
          throw new Error(`VM ${def.name} did not answer over ssh: ${log.slice(-2000)}`);
        }
        const log = await fsp.readFile(consoleLog, "utf8");
        if (log.includes("qm-vm-ready")) {
          const probe = await execa(
            "ssh",
            ["-F", sshConfig, "-o", "ConnectTimeout=20", def.name, "true"],
            {
              reject: false,
            },
          );
          if (probe.exitCode === 0) break;
        }
        await sleep(500);
      }
      bootSeconds.push((performance.now() - started) / 1000);
    };
    await boot();

    return {
      name: def.name,
      release,
      dir,
      sshConfig,
      bootSeconds,
      exec,
      async reboot() {
        await stopQemu();
        await boot();
      },
      async stop() {
        await stopQemu();
        await fsp.rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopQemu();
    await fsp.rm(dir, { recursive: true, force: true });
    throw err;
  }
}
