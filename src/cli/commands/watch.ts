import { io } from "../io.js";
import { UsageError } from "../../errors.js";
import { eventLine } from "../../report/formats/events.js";
import { visible } from "../../text/escape.js";
import { prepareWatch, type WatchRunOptions } from "../../runs/watch.js";
import { checkedFlag, parseFlags, textFlag, wholeFlag, type Config } from "../flags.js";
import { MANIFEST_FLAGS, SELECT_FLAGS, TIMEOUT_FLAG } from "../options.js";

const DEFAULT_INTERVAL_SECONDS = 60;

const WATCH_FLAGS = {
  local: {
    ...SELECT_FLAGS.local,
    required: { message: "watch runs on the node it watches: pass --local" },
  },
  manifests: MANIFEST_FLAGS.manifests,
  nodes: SELECT_FLAGS.nodes,
  /** One node-spec file on its own, as kept on the node (/etc/quartermaster/node-spec.yaml). */
  manifest: {
    ...textFlag("FILE", "one node-spec file, as kept on the node itself (instead of --manifests)"),
    excludes: {
      manifests:
        "--manifest (one node-spec file) and --manifests (a manifest tree) exclude each other",
    },
  },
  interval: wholeFlag(
    "SECONDS",
    "seconds between polls of the domains no file event announces (default: 60)",
    DEFAULT_INTERVAL_SECONDS,
  ),
  timeout: TIMEOUT_FLAG,
  "metrics-listen": textFlag("HOST:PORT", "serve Prometheus /metrics and /healthz on this address"),
  "maintenance-marker": checkedFlag(
    "FILE",
    "pause while this file exists (default: fleet.yaml audit.maintenance_marker)",
    (given) => {
      if (!given.startsWith("/"))
        throw new UsageError("--maintenance-marker takes an absolute path");
      return given;
    },
  ),
};

type WatchConfig = Config<typeof WATCH_FLAGS>;

/** `watch`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function watchConfig(argv: string[]): WatchConfig {
  return parseFlags("watch", argv, WATCH_FLAGS).config;
}

// Log lines quote host text (diffs, file contents): escaped here, where they reach the terminal.
const log = (line: string) => io().stderr.write(`${visible(line, { multiline: true })}\n`);

/** What the flags ask to watch, how often, and where events, log lines and metrics go. */
const watchOptions = (config: WatchConfig): WatchRunOptions => ({
  manifest: config.manifest,
  manifests: config.manifests,
  nodes: config.nodes,
  timeout: config.timeout,
  maintenanceMarker: config["maintenance-marker"],
  intervalMs: config.interval * 1000,
  metricsListen: config["metrics-listen"],
  emit: (event) => io().stdout.write(eventLine(event)),
  log,
});

/** `watch --local`: runs until SIGTERM or SIGINT (exit 0); SIGHUP reloads the manifest. */
export async function watchCommand(argv: string[]): Promise<number> {
  const watch = await prepareWatch(watchOptions(watchConfig(argv)));
  // Reloads run one after another, so a burst of SIGHUPs cannot apply an older manifest last.
  let reloading = Promise.resolve();
  const reload = () => {
    reloading = reloading.then(() => watch.reload());
  };
  // Handlers go in before the started event: whoever reads it may signal at once. They stay
  // installed while stopping: execa's exit hook re-raises a signal nobody else listens for.
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      void watch.stop(`received ${signal}`).then(() => resolve(0));
    };
    process.on("SIGTERM", stop).on("SIGINT", stop).on("SIGHUP", reload);
  });
  watch.start();
  return stopped;
}
