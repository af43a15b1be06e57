// Accepting a finding must make that finding go away: each domain's accept is checked by
// comparing again against the same live state, and by the declaration it writes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Finding } from "../../../src/domains/domain.js";
import type { AnyDomain } from "../../../src/domains/registry.js";
import { files } from "../../../src/domains/files/index.js";
import { ioScheduler } from "../../../src/domains/io_scheduler/index.js";
import { kernelModules } from "../../../src/domains/kernel_modules/index.js";
import { packages } from "../../../src/domains/packages/index.js";
import { ports } from "../../../src/domains/ports/index.js";
import { routes } from "../../../src/domains/routes/index.js";
import { systemd } from "../../../src/domains/systemd/index.js";
import { sysctl } from "../../../src/domains/sysctl/index.js";
import { acceptFinding } from "../../../src/propose/accept.js";
import { liveFrom } from "../domains/fixtures.js";

/**
 * Accepts every finding in turn, as one accept PR per drift would, and returns the final
 * declaration. A latent finding (as declared now, changed by the next boot) is no drift to accept.
 */
function acceptAll(domain: AnyDomain, declared: unknown, live: unknown): unknown {
  let current = domain.schema.parse(declared);
  const drift = () => domain.compare(current, live).filter((finding) => !finding.latent);
  const findings = drift();
  assert.ok(findings.length > 0, "the declaration drifts to begin with");
  for (const finding of findings)
    current = domain.schema.parse(acceptFinding(domain, current, finding));
  assert.deepEqual(drift(), [], "no drift is left once every finding is accepted");
  return current;
}

describe("accept: the declaration after accepting live state", () => {
  it("ports: an unauthorized listener joins the allow-list; a closed declared port leaves it", () => {
    const live = liveFrom(ports, "one-listener.txt");
    const [listening] = [...live.listeners.keys()] as string[];
    assert.deepEqual(
      acceptAll(ports, ["tcp/443", listening === "tcp/22" ? "tcp/80" : "tcp/22"], live),
      [listening],
    );
  });

  it("routes: a missing route leaves the declared set; a stray route joins it as `ip route` shows it", () => {
    const live = liveFrom(routes, "dual-stack-vm.txt");
    const accepted = acceptAll(
      routes,
      [
        { dst: "default", via: "192.0.2.254", dev: "eth0" },
        { dst: "default", via: "fd00::1", dev: "eth0" },
      ],
      live,
    );
    assert.deepEqual(accepted, [
      { dst: "default", via: "fd00::1", dev: "eth0" },
      { dst: "default", via: "192.0.2.1", dev: "eth0" },
    ]);
  });

  it("kernel_modules: a module moves between loaded and absent", () => {
    const live = liveFrom(kernelModules, "debian-bridge-host.txt");
    const loaded = [...live.loaded][0] as string;
    const accepted = acceptAll(kernelModules, { loaded: ["cramfs"], absent: [loaded] }, live);
    assert.deepEqual(accepted, { loaded: [loaded], absent: ["cramfs"] });
  });

  it("io_scheduler: a device a glob covers gets its own entry; a pattern matching no device goes", () => {
    const live = liveFrom(ioScheduler, "loop-and-virtio.txt");
    const devices = [...live.keys()].filter((d) => d.startsWith("vd")) as string[];
    const accepted = acceptAll(ioScheduler, { "vd*": "bfq", "nvme*": "none" }, live) as Record<
      string,
      string
    >;
    assert.equal(accepted["vd*"], "bfq", "the glob stays for the devices to come");
    assert.equal(accepted["nvme*"], undefined);
    for (const device of devices) assert.equal(accepted[device], live.get(device).active);
  });

  it("sysctl: the live value, a number where YAML would write one", () => {
    const at = (key: string, live: string | null): Finding => ({
      key,
      declared: "1",
      live,
      path: ["system", "sysctl_parameters", key],
    });
    const declared = {
      "vm.swappiness": "1",
      "net.ipv4.ip_local_port_range": "1024 65000",
      "fs.file-max": "9",
    };
    assert.deepEqual(acceptFinding(sysctl, declared, at("vm.swappiness", "60")), {
      ...declared,
      "vm.swappiness": 60,
    });
    assert.deepEqual(
      acceptFinding(sysctl, declared, at("net.ipv4.ip_local_port_range", "32768 60999")),
      { ...declared, "net.ipv4.ip_local_port_range": "32768 60999" },
    );
    const { "fs.file-max": _, ...rest } = declared;
    assert.deepEqual(
      acceptFinding(sysctl, declared, at("fs.file-max", null)),
      rest,
      "a parameter this kernel lacks leaves the manifest",
    );
    const proto = acceptFinding(sysctl, declared, at("__proto__", "2"));
    assert.deepEqual(proto, { ...declared, ["__proto__"]: 2 }, "__proto__ is a parameter's name");
    assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  });

  it("packages (the generic edit): a package named __proto__ becomes a key, not a prototype", () => {
    const declared = { bash: "*" };
    const accepted = acceptFinding(packages, declared, {
      key: "__proto__",
      declared: "1.0",
      live: "2.0",
      path: ["packages", "installed_manifest", "__proto__"],
    });
    assert.deepEqual(accepted, { bash: "*", ["__proto__"]: "2.0" });
    assert.equal(Object.getPrototypeOf(accepted), Object.prototype);
  });

  describe("files", () => {
    const declared = files.schema.parse([
      { path: "/etc/app.conf", contents: "a = 1\n", mode: "0644" },
      { path: "/etc/gone", absent: true },
      { path: "/etc/secret.env", sha256: "a".repeat(64), secret: true },
      { path: "/etc/big", contents: "x" },
    ]);
    const accept = (finding: Omit<Finding, "declared"> & { declared?: Finding["declared"] }) =>
      (acceptFinding(files, declared, { declared: null, ...finding }) as typeof declared).find(
        (f) => f.path === finding.path[1],
      );

    it("a file that does not exist is declared absent; a file that must be absent but exists is declared present", () => {
      assert.deepEqual(
        accept({
          key: "/etc/app.conf",
          declared: "present",
          live: null,
          path: ["files", "/etc/app.conf"],
        }),
        { path: "/etc/app.conf", absent: true },
      );
      assert.deepEqual(
        accept({
          key: "/etc/gone",
          declared: "absent",
          live: "present",
          path: ["files", "/etc/gone", "absent"],
        }),
        { path: "/etc/gone" },
      );
    });

    it("contents read from the host are written; contents compared by hash become a sha256", () => {
      assert.equal(
        accept({
          key: "/etc/app.conf",
          live: "a = 2\n",
          diff: "-a = 1\n+a = 2\n",
          path: ["files", "/etc/app.conf", "contents"],
        })?.contents,
        "a = 2\n",
      );
      const big = accept({
        key: "/etc/big",
        live: `sha256:${"b".repeat(64)} (2000000 bytes)`,
        path: ["files", "/etc/big", "contents"],
      });
      assert.deepEqual(big, { path: "/etc/big", sha256: "b".repeat(64) });
      const secret = accept({
        key: "/etc/secret.env",
        live: "c".repeat(64),
        path: ["files", "/etc/secret.env", "sha256"],
      });
      assert.deepEqual(secret, { path: "/etc/secret.env", sha256: "c".repeat(64), secret: true });
    });

    it("mode, owner and group take the live value", () => {
      assert.equal(
        accept({
          key: "/etc/app.conf:mode",
          live: "0600",
          path: ["files", "/etc/app.conf", "mode"],
        })?.mode,
        "0600",
      );
    });

    it("live text is written as read, even when it looks like a hash", () => {
      const live = `sha256:${"e".repeat(64)} (12 bytes)`;
      assert.equal(
        accept({
          key: "/etc/app.conf",
          live,
          diff: `-a = 1\n+${live}`,
          path: ["files", "/etc/app.conf", "contents"],
        })?.contents,
        live,
      );
    });

    it("refuses what the audit could not read or hash, and non-files", () => {
      for (const live of ["<9000 bytes, not read>", "<directory>"]) {
        assert.throws(
          () =>
            accept({ key: "/etc/app.conf", live, path: ["files", "/etc/app.conf", "contents"] }),
          /cannot be written into the manifest/,
        );
      }
    });
  });

  describe("systemd", () => {
    const declared = systemd.schema.parse([
      { name: "nginx.service", enabled: true, contents: "[Unit]\n", dropins: { "a.conf": "x\n" } },
      { name: "gone.service", active: true },
    ]);
    const base = ["systemd", "units"];

    it("a unit that does not exist leaves the manifest; enabled and active take the live value", () => {
      assert.deepEqual(
        acceptFinding(systemd, declared, {
          key: "gone.service",
          declared: "present",
          live: null,
          path: [...base, "gone.service"],
        }),
        [declared[0]],
      );
      const enabled = acceptFinding(systemd, declared, {
        key: "nginx.service:enabled",
        declared: true,
        live: false,
        path: [...base, "nginx.service", "enabled"],
      });
      assert.equal((enabled as typeof declared)[0]!.enabled, false);
    });

    it("unit files and drop-ins: live text is written, a missing drop-in goes, an extra one is added", () => {
      const unit = (finding: Finding) =>
        (acceptFinding(systemd, declared, finding) as typeof declared)[0]!;
      assert.equal(
        unit({
          key: "nginx.service:contents",
          declared: "[Unit]\n",
          live: "[Unit]\nX=1\n",
          diff: "+X=1",
          path: [...base, "nginx.service", "contents"],
        }).contents,
        "[Unit]\nX=1\n",
      );
      assert.deepEqual(
        unit({
          key: "nginx.service.d/a.conf",
          declared: "x\n",
          live: null,
          path: [...base, "nginx.service", "dropins", "a.conf"],
        }).dropins,
        {},
      );
      assert.deepEqual(
        unit({
          key: "nginx.service.d/b.conf",
          declared: null,
          live: "y\n",
          diff: "+y",
          path: [...base, "nginx.service", "dropins", "b.conf"],
        }).dropins,
        { "a.conf": "x\n", "b.conf": "y\n" },
      );
      assert.throws(
        () =>
          unit({
            key: "nginx.service:contents",
            declared: "[Unit]\n",
            live: "<binary, 3 bytes>",
            path: [...base, "nginx.service", "contents"],
          }),
        /cannot be written/,
      );
    });
  });
});
