// The forge as records: what GitHub says, not what it means. Reading a pull request as one of
// Quartermaster's proposals is propose's job.

export interface PullRecord {
  number: number;
  state: "open" | "closed";
  merged: boolean;
  branch: string;
  title: string;
  body: string;
  labels: string[];
  /** The login that opened it: for the bot's own pull requests, the bot. */
  author?: string;
  /** When it was opened (GitHub's ISO time). */
  createdAt?: string;
}

/** A comment on a pull request or issue, and who wrote it. */
export interface CommentRecord {
  author?: string;
  body: string;
}

/** An issue (never a pull request) as GitHub lists it. */
export interface IssueRecord {
  number: number;
  body: string;
  author?: string;
}

/** An owner GitHub was not asked, or refused, to request a review from, and why. */
export interface Unasked {
  owner: string;
  reason: string;
}

/** Who wrote and who committed a commit, by email. */
export interface CommitRecord {
  author?: string;
  committer?: string;
}

/** One commit read by its sha: who wrote and committed it, and when it was committed (ISO 8601). */
export interface CommitInfo extends CommitRecord {
  date: string;
}
