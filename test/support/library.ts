// A shared library built here with gcc, under a /usr/lib directory of its own (a systemd test host
// shares this machine's /usr: only a library of ours may be replaced), to be mapped by a test
// host's process and then replaced as a package manager replaces a file.
import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";

export interface TestLibrary {
  /** /usr/lib/qm-test-<random>/NAME (default libqmx.so) */
  path: string;
  /** A new build written beside it and renamed over it, as dpkg does: the old file is deleted. */
  replace(): Promise<void>;
  /** Removes the library and its directory. */
  remove(): Promise<void>;
}

/** Builds the library, named `name`; `scratch` holds its C sources. */
export async function buildLibrary(scratch: string, name = "libqmx.so"): Promise<TestLibrary> {
  const dir = `/usr/lib/qm-test-${randomBytes(6).toString("hex")}`;
  const library = path.join(dir, name);
  let version = 0;
  const build = async (out: string) => {
    version += 1;
    const source = path.join(scratch, `libqmx-${version}.c`);
    await writeFile(source, `int qm_version(void) { return ${version}; }\n`);
    await execa("gcc", ["-shared", "-fPIC", "-o", out, source]);
  };
  await mkdir(dir);
  await build(library);
  return {
    path: library,
    async replace() {
      const next = `${library}.dpkg-new`;
      await build(next);
      await execa("mv", ["-f", next, library]);
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
