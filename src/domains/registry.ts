// The one place audit domains are registered. Adding a domain (docs/adding-a-domain.md): its folder
// under src/domains/, its name in DOMAIN_NAMES (domain.ts) and one line here, in the same order;
// test/unit/domains/registry.test.ts fails when a folder, a name and a registered domain disagree.
import type { AnyDomain } from "./domain.js";
import { files } from "./files/index.js";
import { ioScheduler } from "./io_scheduler/index.js";
import { kernel } from "./kernel/index.js";
import { kernelModules } from "./kernel_modules/index.js";
import { packages } from "./packages/index.js";
import { ports } from "./ports/index.js";
import { routes } from "./routes/index.js";
import { sysctl } from "./sysctl/index.js";
import { systemd } from "./systemd/index.js";

export const DOMAINS: readonly AnyDomain[] = [
  kernel,
  sysctl,
  ioScheduler,
  routes,
  packages,
  ports,
  files,
  systemd,
  kernelModules,
];

export function domainByName(name: string): AnyDomain | undefined {
  return DOMAINS.find((d) => d.name === name);
}
