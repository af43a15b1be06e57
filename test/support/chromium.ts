// Debian's headless Chromium on a local page, with no network: the DOM as it parsed the page, and
// a screenshot for a person to look at.
import { execa } from "execa";
import path from "node:path";

function chromium(page: string, extra: string[]) {
  return execa("/usr/bin/chromium", [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    `--user-data-dir=${path.join(path.dirname(page), "chromium-profile")}`,
    ...extra,
    `file://${page}`,
  ]);
}

/** The page's DOM, serialized after Chromium parsed it. */
export const dumpDom = async (page: string): Promise<string> =>
  (await chromium(page, ["--dump-dom"])).stdout;

/** Writes a PNG of the page to `shot`. */
export async function screenshot(page: string, shot: string): Promise<void> {
  await chromium(page, [`--screenshot=${shot}`, "--window-size=1000,1400"]);
}

/** A node's section of the fleet page, from the DOM. */
export const nodeSection = (dom: string, name: string): string =>
  dom.match(new RegExp(`<details [^>]*data-node="${name}"[^]*?</details>`))?.[0] ?? "";
