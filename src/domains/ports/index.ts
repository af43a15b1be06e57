import { z } from "zod";
import type { Domain, Finding } from "../domain.js";
import { comparePorts, parsePorts, type PortsLive } from "./parse.js";

const Port = z.string().refine((value) => {
  const m = /^(tcp|udp)\/([1-9]\d{0,4})$/.exec(value);
  return m !== null && Number(m[2]) <= 65535;
}, 'a port like "tcp/22" or "udp/53": tcp or udp, a slash, a port number from 1 to 65535');
export const PortsDeclared = z.array(Port);
export type PortsDeclared = z.infer<typeof PortsDeclared>;

export const ports: Domain<PortsDeclared, PortsLive> = {
  name: "ports",
  title: "Listening ports",
  specPath: ["networking", "listening_ports"],
  schema: PortsDeclared,
  severity: "high",
  onDrift: "ticket",
  itemsAreASet: true,
  remediation: "Stop the unauthorized listener or add the port to networking.listening_ports.",
  probe() {
    // One grep over the four socket tables (the IPv6 ones are absent without IPv6); it keeps the
    // headers, to prove each table was read, and only sockets in the LISTEN or CLOSE state,
    // since a busy host has many thousands of connections.
    return [
      "grep -H -s -E -e '^ +sl ' -e '^ *[0-9]+: [0-9A-F]+:[0-9A-F]+ [0-9A-F]+:[0-9A-F]+ (0A|07) ' \\",
      "  /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6",
      "true",
    ].join("\n");
  },
  parse(output) {
    return parsePorts(output);
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    declared.forEach((port, i) => {
      if (!live.has(port)) findings.push({ key: port, declared: "listening", live: "closed", path: [...this.specPath, i] });
    });
    const allowed = new Set(declared);
    for (const [port, addresses] of live) {
      if (allowed.has(port)) continue;
      findings.push({ key: port, declared: "closed", live: "listening", path: this.specPath, detail: `listening on ${addresses.join(", ")}` });
    }
    return findings;
  },
  accept(declared, finding) {
    // A declared port found closed leaves the allow-list; an unauthorized listener joins it.
    if (finding.live === "closed") return declared.filter((port) => port !== finding.key);
    return declared.includes(finding.key) ? declared : [...declared, finding.key];
  },
  snapshot(live) {
    return [...live.keys()].sort(comparePorts);
  },
};
