import { ManifestError, ManifestErrors, formatLocation } from "../../errors.js";
import { loadManifests, MANIFEST_OPTIONS, parse } from "../options.js";

/** `::error file=…,line=…,col=…::message`, the workflow command GitHub turns into an annotation. */
export function githubAnnotation(error: ManifestError): string {
  const escape = (s: string) => s.replaceAll("%", "%25").replaceAll("\r", "%0D").replaceAll("\n", "%0A");
  const property = (s: string) => escape(s).replaceAll(":", "%3A").replaceAll(",", "%2C");
  const props = [`file=${property(error.location.file)}`];
  if (error.location.line !== undefined) props.push(`line=${error.location.line}`);
  if (error.location.col !== undefined) props.push(`col=${error.location.col}`);
  const message = error.hint ? `${error.message} (${error.hint})` : error.message;
  return `::error ${props.join(",")}::${escape(message)}`;
}

export async function validateCommand(argv: string[]): Promise<number> {
  const { values } = parse("validate", argv, MANIFEST_OPTIONS);
  try {
    const fleet = await loadManifests(values);
    const groups = new Set(fleet.nodes.flatMap((n) => n.groups));
    process.stdout.write(`${formatLocation({ file: values.manifests ?? "fleet-manifests" })}: valid (${fleet.nodes.length} nodes, ${groups.size} groups in use)\n`);
    return 0;
  } catch (error) {
    if (error instanceof ManifestErrors && process.env.GITHUB_ACTIONS === "true") {
      for (const e of error.errors) process.stdout.write(`${githubAnnotation(e)}\n`);
    }
    throw error;
  }
}
