// A manifest repository on the real git server, with the GitHub double on top of it: what the
// end-to-end tests of propose and review run the real CLI against.
import { startGitServer, type GitServer } from "./git-server.js";
import { startGitHubDouble, type GitHubDouble } from "./github-double/index.js";
import { removeTree, writeTree } from "./tree.js";

export interface TestForge {
  server: GitServer;
  double: GitHubDouble;
}

/** `owner/repo` holding `files` (paths to contents) on a new git server, and the double on it. */
export async function startForge(options: {
  token: string;
  owner: string;
  repo: string;
  files: Record<string, string>;
  botLogin?: string;
}): Promise<TestForge> {
  const { token, owner, repo } = options;
  const seed = await writeTree(options.files);
  const server = await startGitServer({ token });
  try {
    await server.createRepo(owner, repo, seed);
  } finally {
    await removeTree(seed);
  }
  const double = await startGitHubDouble({
    git: server,
    owner,
    repo,
    token,
    botLogin: options.botLogin ?? "quartermaster[bot]",
  });
  return { server, double };
}
