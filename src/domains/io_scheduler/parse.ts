import { ProbeParseError } from "../../errors.js";

export interface DeviceScheduler {
  active: string;
  /** Every scheduler the device offers, active one included. */
  available: string[];
}

/** Block device name -> its schedulers. */
export type IoSchedulerLive = Map<string, DeviceScheduler>;

/**
 * `FILE:LINE` of each /sys/block/<dev>/queue/scheduler: `/sys/block/vda/queue/scheduler:none
 * [mq-deadline] kyber`.
 */
export function parseSchedulers(text: string): IoSchedulerLive {
  const devices: IoSchedulerLive = new Map();
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const m = /^\/sys\/block\/([^/\s]+)\/queue\/scheduler:(.*)$/.exec(line);
    if (!m) throw new ProbeParseError("io_scheduler", `unexpected line "${line.slice(0, 80)}"`);
    const device = m[1]!;
    const words = m[2]!.trim().split(/\s+/).filter(Boolean);
    if (!words.every((w) => /^\[?[A-Za-z0-9_-]+\]?$/.test(w)))
      throw new ProbeParseError(
        "io_scheduler",
        `unexpected schedulers "${m[2]!.slice(0, 80)}" for ${device}`,
      );
    const bracketed = words.filter((w) => w.startsWith("[") && w.endsWith("]"));
    const available = words.map((w) => w.replace(/^\[|\]$/g, ""));
    // A device without a choice prints its one scheduler bare ("none").
    const active =
      bracketed.length === 1
        ? bracketed[0]!.slice(1, -1)
        : words.length === 1
          ? available[0]
          : undefined;
    if (active === undefined)
      throw new ProbeParseError(
        "io_scheduler",
        `no active scheduler in "${m[2]!.slice(0, 80)}" for ${device}`,
      );
    devices.set(device, { active, available });
  }
  return devices;
}
