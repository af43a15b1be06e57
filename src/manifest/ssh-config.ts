// The ssh_config kept beside the manifests (`ssh_config`), which the workflows pass to ssh: the
// lines in it that make ssh run a command, or load code, on the machine that audits.

export interface SshConfigCommand {
  line: number;
  col: number;
  /** The keyword as written (`ProxyCommand`, `Match`). */
  keyword: string;
  why: string;
}

// Keyword (lower case, as ssh compares them) -> the value that runs nothing.
const RUNS_A_COMMAND = new Map([
  ["proxycommand", "none"],
  ["localcommand", "none"],
  ["knownhostscommand", "none"],
  ["permitlocalcommand", "no"],
  ["pkcs11provider", "none"],
  ["securitykeyprovider", "internal"],
]);

/** Lines ssh reads as a keyword and its arguments: `Keyword value`, `Keyword=value`, quoted. */
const LINE = /^\s*("?)([A-Za-z0-9]+)\1(?:\s*=\s*|\s+)(.*)$/;

/**
 * Each line of `text` that makes ssh (or `ssh -G`, for `Match exec`) run a program on this machine,
 * and `Include`, which brings in lines nobody reviewed here. Checked as ssh reads keywords: case
 * apart, `=` or spaces after the keyword.
 */
export function sshConfigCommands(text: string): SshConfigCommand[] {
  const found: SshConfigCommand[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const match = LINE.exec(raw);
    if (!match) return;
    const keyword = match[2]!;
    const value = match[3]!.trim().replace(/^"(.*)"$/, "$1");
    const at = { line: index + 1, col: raw.length - raw.trimStart().length + 1, keyword };
    const lower = keyword.toLowerCase();
    const harmless = RUNS_A_COMMAND.get(lower);
    if (harmless !== undefined && value.toLowerCase() !== harmless)
      found.push({ ...at, why: `${keyword} makes ssh run a program on the auditing machine` });
    else if (lower === "match" && /(^|[\s="!])exec([\s="]|$)/i.test(value))
      found.push({ ...at, why: "Match exec runs a command on the auditing machine (ssh -G too)" });
    else if (lower === "include")
      found.push({ ...at, why: "Include brings in ssh_config lines this tree does not show" });
  });
  return found;
}
