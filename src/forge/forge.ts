import type { GitHubSettings } from "./github-settings.js";
import type {
  CommentRecord,
  CommitInfo,
  CommitRecord,
  IssueRecord,
  PullRecord,
  Unasked,
} from "./records.js";

/** A file as a commit writes it: its text, a blob written before (`writeBlob`), or null: deleted. */
export type FileChange = string | { blob: string } | null;

// What propose asks of a code host: the one seam between it and the forge. The GitHub client
// (github.ts) is its one implementation; another host implements this and returns the same records.

export interface Forge {
  /**
   * Who the bot commits as: its own commits are told from a person's by this author. The largest
   * blob it writes: what is larger is kept in parts.
   */
  readonly settings: Pick<GitHubSettings, "author" | "maxBlobBytes">;
  /** The login the bot acts as: only its own issues are its dashboard. */
  botLogin(): Promise<string>;
  defaultBranch(): Promise<string>;
  /** A branch's head commit; undefined when there is no such branch. */
  branchHead(branch: string): Promise<string | undefined>;
  /** Every pull request, open and closed, from a branch of this repository named with the prefix. */
  pulls(branchPrefix: string): Promise<PullRecord[]>;
  issues(label: string): Promise<IssueRecord[]>;
  openIssue(input: { title: string; body: string; labels: string[] }): Promise<number>;
  updateIssue(number: number, body: string): Promise<void>;
  pullCommits(number: number): Promise<CommitRecord[]>;
  /** Whether pull request `number` merges into its base as it is; undefined while not yet known. */
  mergeable(number: number): Promise<boolean | undefined>;
  comments(number: number): Promise<CommentRecord[]>;
  /** A file's text on a branch; undefined when the branch or file is absent. */
  readFile(branch: string, path: string, what: string): Promise<string | undefined>;
  /** A blob's bytes by its sha; undefined when there is no such blob. */
  readBlob(sha: string, what: string): Promise<Buffer | undefined>;
  /** Writes a blob of `bytes` (at most `settings.maxBlobBytes`); its sha. */
  writeBlob(bytes: Buffer, what: string): Promise<string>;
  /** A commit on `parent` writing `files` (text, a blob written before, or null: deleted); its sha. */
  commitFiles(parent: string, files: Record<string, FileChange>, message: string): Promise<string>;
  /** Creates a branch at `sha`; false when it exists already. */
  createBranch(branch: string, sha: string): Promise<boolean>;
  commit(sha: string): Promise<CommitInfo>;
  setBranch(branch: string, sha: string): Promise<void>;
  openPull(input: { branch: string; base: string; title: string; body: string }): Promise<number>;
  /** The owners that could not be asked to review. */
  requestReviewers(number: number, owners: readonly string[]): Promise<Unasked[]>;
  addLabels(number: number, labels: readonly string[]): Promise<void>;
  updatePull(number: number, input: { title: string; body: string }): Promise<void>;
  comment(number: number, body: string): Promise<void>;
  closePull(number: number): Promise<void>;
  deleteBranch(branch: string): Promise<void>;
  canWrite(login: string): Promise<boolean>;
}
