import assert from "node:assert/strict";
import type { DomainSample } from "./domain-sample.js";
import type { ports } from "../../../src/domains/ports/index.js";

export const sample: DomainSample<typeof ports> = {
  reads: ["/proc", "/etc/passwd"],
  declared: ["tcp/22", "udp/53"],
  bench: {
    declared: ["tcp/22"],
    output: (n, { lines }) => {
      const port = (i: number) => ((i % 65535) + 1).toString(16).toUpperCase().padStart(4, "0");
      return `/proc/net/tcp:  sl  local_address\n${lines(n, (i) => `/proc/net/tcp:   ${i}: 00000000:${port(i)} 00000000:0000 0A `)}`;
    },
  },
  hostile: {
    section: () => "/proc/net/tcp:  sl  local_address rem_address   st tx_queue rx_queue\n",
    declared: [],
    drift: (items) => assert.equal(items.length, 0),
  },
  fleet: {
    host: { listeners: ["tcp/8080"] },
    drift(items) {
      assert.equal(items.length, 1, JSON.stringify(items));
      assert.match(items[0]!.key, /tcp\/8080/);
    },
  },
};
