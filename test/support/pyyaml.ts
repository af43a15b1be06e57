// PyYAML (YAML 1.1, as Ansible, yamllint and most CI tools read YAML): one python3 process reads
// many documents, so a property test pays for one start-up, not one per case.
import { existsSync } from "node:fs";
import { execa } from "execa";

// Debian's python3 with python3-yaml (scripts/ci-install.sh), else whichever python3 is on PATH.
const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";

const SCRIPT = `
import json, sys, yaml
out = []
for text in json.load(sys.stdin):
    try:
        out.append({"value": yaml.safe_load(text)})
    except Exception as error:
        out.append({"error": type(error).__name__ + ": " + str(error)})
json.dump(out, sys.stdout, default=lambda o: {"__not_json__": repr(o)})
`;

export type PyYamlResult = { value: unknown } | { error: string };

/** Each text as PyYAML's safe_load reads it, or the error it raised. */
export async function pyyamlLoad(texts: readonly string[]): Promise<PyYamlResult[]> {
  const { stdout } = await execa(PYTHON, ["-c", SCRIPT], { input: JSON.stringify(texts) });
  return JSON.parse(stdout) as PyYamlResult[];
}
