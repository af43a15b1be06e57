import { visible } from "../../text/escape.js";

// Text on the page comes from hosts and manifests: controls made visible, then every character
// HTML gives a meaning escaped. Colons and brackets too, so no line of the file reads as a GitHub
// runner command (`::` at a line start, `##[`) should a log ever print it.
const ENTITY: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  ":": "&#58;",
  "[": "&#91;",
};

export const html = (text: string): string =>
  visible(text).replace(/[&<>"':[]/g, (c) => ENTITY[c]!);
