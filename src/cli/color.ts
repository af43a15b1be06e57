// Whether output is coloured: loaded with the writing of what is coloured, not before a run starts
// (supports-color imports node:process and node:tty whole).
import { createSupportsColor } from "supports-color";
import { io, type Output } from "./io.js";

/**
 * Whether to colour a stream, by the conventions operators already use: --no-color, then
 * --color, then NO_COLOR (no-color.org), then FORCE_COLOR, TERM=dumb and whether the stream is a
 * terminal, as supports-color (chalk's) reads them.
 */
export function useColor(
  values: { "no-color"?: boolean; color?: boolean },
  stream: Output,
  env = io().env,
): boolean {
  if (values["no-color"]) return false;
  if (values.color) return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  // supports-color reads only the stream's isTTY.
  return createSupportsColor(stream as NodeJS.WriteStream, { sniffFlags: false }) !== false;
}
