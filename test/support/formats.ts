// Every output format's renderer, loaded: the registry loads each only when a run asks for it.
import { FORMAT_NAMES, type FormatName, type Renderer } from "../../src/report/formats/format.js";
import { FORMATS } from "../../src/report/formats/index.js";

export async function renderers(): Promise<Record<FormatName, Renderer>> {
  const loaded = await Promise.all(
    FORMAT_NAMES.map(async (name) => [name, (await FORMATS[name]()).render] as const),
  );
  return Object.fromEntries(loaded) as Record<FormatName, Renderer>;
}
